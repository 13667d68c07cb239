import nbformat, sys
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell
HONEST = '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x-mu)**2).mean(-1, keepdims=True)
    return gamma*(x-mu)/np.sqrt(var+eps)+beta
'''
def nb(path, *cells, meta=None):
    n = new_notebook()
    for c in cells:
        if isinstance(c, dict): n.cells.append(c)
        else: n.cells.append(new_code_cell(c))
    if meta: n.metadata.update(meta)
    nbformat.write(n, path)
