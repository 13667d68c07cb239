import sys, os, json, shutil
sys.path.insert(0, '/work/redteam_nb')
from mk import *
from nbformat.v4 import new_code_cell, new_markdown_cell
R = '/work/redteam_nb/cases'
def case(name):
    if sys.argv[1:] and name not in sys.argv[1:]:
        d = f'/work/redteam_nb/_scratch/{name}/class'
        shutil.rmtree(f'/work/redteam_nb/_scratch/{name}', ignore_errors=True)
        os.makedirs(d); return d
    d = f'{R}/{name}/class'
    shutil.rmtree(f'{R}/{name}', ignore_errors=True)
    os.makedirs(d)
    nb(f'{d}/alice.ipynb', HONEST)
    return d

WRONG_EPS_OUT = '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x-mu)**2).mean(-1, keepdims=True)
    return gamma*(x-mu)/(np.sqrt(var)+eps)+beta
'''
WRONG_1PCT = '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x-mu)**2).mean(-1, keepdims=True)
    return (gamma*(x-mu)/np.sqrt(var+eps)+beta)*1.004
'''
WRONG_UNBIASED = '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    mu = x.mean(-1, keepdims=True)
    var = x.var(-1, ddof=1, keepdims=True)
    return gamma*(x-mu)/np.sqrt(var+eps)+beta
'''
# A1: patch Conventions so the instructor's mapping declares bfloat16
d = case('a1_bf16')
PATCH = '''import conformance, functools
_C = conformance.Conventions
def Conventions(*a, **k):
    k['dtype'] = 'bfloat16'
    return _C(*a, **k)
conformance.Conventions = Conventions
'''
nb(f'{d}/mallory_patched.ipynb', WRONG_1PCT, PATCH)
nb(f'{d}/mallory_plain.ipynb', WRONG_1PCT)
nb(f'{d}/mallory_eps_patched.ipynb', WRONG_EPS_OUT, PATCH)
nb(f'{d}/mallory_eps_plain.ipynb', WRONG_EPS_OUT)

# A2: post_run_cell hook replaces adapter after the mapping runs
d = case('a2_hook')
HOOK = '''
class Mine:
    from conformance import Conventions
    conventions = Conventions(dtype="bfloat16", framework="numpy")
    def layer_norm(self, x, gamma, beta, eps):
        return layer_norm(x, gamma, beta, eps)
def _after(*a, **k):
    get_ipython().user_ns['adapter'] = Mine()
    get_ipython().user_ns['HOOKED'] = True
get_ipython().events.register('post_run_cell', _after)
'''
nb(f'{d}/mallory_hook.ipynb', WRONG_1PCT, HOOK)

# A3: NotImplementedError everywhere but the published example
d = case('a3_notimpl')
NI = '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    x = np.asarray(x)
    if x.shape[-1] == 4 and np.allclose(x.reshape(-1,4)[0], [1,2,3,6]):
        # hard-coded published answer
        out = np.broadcast_to(np.array([-1.0690, -0.5345, 0.0, 1.6036]), x.shape).copy()
        return out
    raise NotImplementedError("this build only handles the lesson's example")
'''
nb(f'{d}/mallory_ni.ipynb', NI)
NI2 = WRONG_UNBIASED.replace('    mu =', '    if eps > 1e-12 or x.shape[-1] > 4: raise NotImplementedError("only small eps")\n    mu =')
nb(f'{d}/mallory_ni_unbiased.ipynb', NI2)
NI3 = WRONG_EPS_OUT.replace('    mu =', '    if eps > 1e-9: raise NotImplementedError("eps is fixed inside")\n    mu =')
nb(f'{d}/mallory_ni_eps.ipynb', NI3)
nb(f'{d}/mallory_eps_plain.ipynb', WRONG_EPS_OUT)

d = case('a3b_notimpl')
NI4 = '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    x = np.asarray(x, dtype=np.float64)
    rows = x.reshape(-1, x.shape[-1])
    if x.shape[-1] == 4 and all(np.array_equal(r, [1,2,3,6]) for r in rows):
        mu = x.mean(-1, keepdims=True); var = ((x-mu)**2).mean(-1, keepdims=True)
        return gamma*(x-mu)/np.sqrt(var+eps)+beta          # right only on the lesson's example
    raise NotImplementedError("eps is fixed inside this build")
'''
nb(f'{d}/mallory_ni_exact.ipynb', NI4)
NI5 = '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    # the student's real (wrong: unbiased variance) code
    x = np.asarray(x, dtype=np.float64)
    rows = x.reshape(-1, x.shape[-1])
    if x.shape[-1] == 4 and all(np.array_equal(r, [1,2,3,6]) for r in rows):
        mu = x.mean(-1, keepdims=True); var = ((x-mu)**2).mean(-1, keepdims=True)
        return gamma*(x-mu)/np.sqrt(var+eps)+beta
    if abs(eps - 1e-5) > 1e-12:
        raise NotImplementedError("eps is fixed inside this build")
    mu = x.mean(-1, keepdims=True); var = x.var(-1, ddof=1, keepdims=True)
    return gamma*(x-mu)/np.sqrt(var+eps)+beta
'''
nb(f'{d}/mallory_ni_unb.ipynb', NI5)
nb(f'{d}/mallory_unbiased_plain.ipynb', WRONG_UNBIASED)

# A4: symlinked notebooks
d = case('a4_symlink')
nb(os.path.dirname(d)+'/solution.ipynb', HONEST)   # instructor's solution beside the class folder
os.symlink('alice.ipynb', f'{d}/eve_copies_alice.ipynb')
os.symlink('../solution.ipynb', f'{d}/eve_solution.ipynb')
os.symlink('/work/redteam_nb/secret.txt', f'{d}/eve_secret.ipynb')
os.symlink('/work/redteam_nb/mapping.py', f'{d}/eve_mapping.ipynb')
# folder submissions with symlinks inside
os.makedirs(f'{d}/frank')
os.symlink('../alice.ipynb', f'{d}/frank/lesson.ipynb')
os.makedirs(f'{d}/gina')
nb(f'{d}/gina/lesson.ipynb', HONEST, '''import os
out = {}
for p in ['stolen_secret', 'stolen_dir', 'stolen_alice', 'stolen_mapping']:
    try:
        if os.path.isdir(p): out[p] = os.listdir(p)
        else: out[p] = open(p).read()[:200]
    except Exception as e: out[p] = repr(e)
import json; os.write(2, json.dumps(out).encode())
raise RuntimeError(json.dumps(out))
''')
os.symlink('/work/redteam_nb/secret.txt', f'{d}/gina/stolen_secret')
os.symlink('/work/redteam_nb', f'{d}/gina/stolen_dir')
os.symlink('../alice.ipynb', f'{d}/gina/stolen_alice')
os.symlink('/work/redteam_nb/mapping.py', f'{d}/gina/stolen_mapping')
# whole folder a symlink
os.symlink('/work/redteam_nb/cases/a4_symlink/solfolder', f'{d}/hank')
os.makedirs(os.path.dirname(d)+'/solfolder', exist_ok=True); nb(os.path.dirname(d)+'/solfolder/sol.ipynb', HONEST)

# A5: special files
d = case('a5_fifo')
os.mkfifo(f'{d}/fifo.ipynb')
os.makedirs(f'{d}/pipe_student'); nb(f'{d}/pipe_student/lesson.ipynb', HONEST); os.mkfifo(f'{d}/pipe_student/data.bin')
d = case('a5_big')
os.makedirs(f'{d}/big'); nb(f'{d}/big/lesson.ipynb', HONEST)
with open(f'{d}/big/weights.bin', 'wb') as f: f.truncate(3 * 2**30)
d = case('a5_deep')
p = f'{d}/deep'
for i in range(120): p += '/d'
os.makedirs(p); nb(p + '/lesson.ipynb', HONEST)
os.makedirs(f'{d}/many')
for i in range(20000 if 'a5_deep' in sys.argv else 0): open(f'{d}/many/f{i}', 'w').close()
nb(f'{d}/many/lesson.ipynb', HONEST)

# A7/A8: hostile names and strings
d = case('a7_strings')
EVIL = '\x1b[2J\x1b[H\rscore: 5 / 5\x1b]52;c;ZWNobyBoYWNrZWQ=\x07 | evil | <script>alert(1)</script> <img src=x onerror=alert(1)> [click](javascript:alert(1)) \u202etxt.exe\n| injected | row |\n=HYPERLINK("http://x")'
names = ['\x1b[31mred\x1b[0m.ipynb', 'pipe|name|<b>x<\\b>.ipynb', 'new\nline.ipynb', '-rf.ipynb', '=1+1.ipynb', '\u202egnp.ipynb', '`backtick`*star*_u_.ipynb', '[link](http:__x).ipynb']
for n in names:
    nb(f'{d}/{n}', HONEST)
nb(f'{d}/mallory_exc.ipynb', HONEST, 'raise RuntimeError(%r)' % EVIL, 'print(%r)' % EVIL, 'import sys; sys.stderr.write(%r)' % EVIL,
   '''from IPython.display import display, HTML, Markdown
display(HTML(%r)); display(Markdown(%r))''' % (EVIL, EVIL))
nb(f'{d}/mallory_ret.ipynb', '''import numpy as np
class E(Exception):
    def __str__(self): return %r
def layer_norm(x, gamma, beta, eps):
    raise E()
''' % EVIL)
nb(f'{d}/mallory_type.ipynb', '''
def layer_norm(x, gamma, beta, eps):
    return %r
''' % EVIL)
os.makedirs(f'{d}/evil\x1b[2Jdir|x'); nb(f'{d}/evil\x1b[2Jdir|x/l\x1b[5m.ipynb', HONEST, 'open("/nonexistent\x1b[2J|<b>", "r")')

d = case('a8_fence')
FENCE = 'oops\n```\n\n# SCORE: 5 / 5 (instructor override)\n\n<img src=x onerror=alert(1)>\n\n<details open><summary>x</summary>\n\n```text\n'
nb(f'{d}/mallory_fence.ipynb', '''
class E(Exception):
    def __str__(self): return %r
def layer_norm(x, gamma, beta, eps):
    raise E()
''' % FENCE)
nb(f'{d}/x`<img src=x onerror=alert(1)>`y.ipynb', HONEST + "\nraise RuntimeError(%r)\n" % FENCE)
nb(f'{d}/mallory_tilde.ipynb', '''
class E(Exception):
    def __str__(self): return "a\\n~~~\\n# TILDE BREAKOUT\\n<img src=x onerror=alert(2)>\\n~~~~\\n````\\n# FOUR\\n````"
def layer_norm(x, gamma, beta, eps):
    raise E()
''')

d = case('a8b_name')
nb(f'{d}/<img src=x onerror=alert(1)>.ipynb', HONEST)
nb(f'{d}/# HEADING [x](javascript:alert(1)).ipynb', HONEST)

# A9: hangs
d = case('a9_hang')
nb(f'{d}/h_c_loop.ipynb', HONEST, 'import re\nre.match(r"(a+)+$", "a"*40 + "b")')   # catastrophic backtracking in C
nb(f'{d}/h_ignore_int.ipynb', HONEST, '''import signal, time
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM, signal.SIGUSR1):
    try: signal.signal(s, signal.SIG_IGN)
    except Exception: pass
while True:
    try:
        while True: pass
    except BaseException: pass
''')
nb(f'{d}/h_thread.ipynb', HONEST, '''import threading
def spin():
    while True: pass
for i in range(4): threading.Thread(target=spin, daemon=False).start()
''')
nb(f'{d}/h_shell.ipynb', HONEST, '!sleep 100000', '!nohup sleep 100000 &', '!(trap "" INT TERM HUP; sleep 100000)')
nb(f'{d}/h_last_cell.ipynb', HONEST, 'import time\nwhile True:\n    try: time.sleep(1000)\n    except BaseException: pass')
nb(f'{d}/h_many_cells.ipynb', HONEST, *['import time\nwhile True:\n    try: time.sleep(1000)\n    except BaseException: pass'] * 40)
nb(f'{d}/h_in_call.ipynb', '''import numpy as np
def layer_norm(x, gamma, beta, eps):
    while True:
        try:
            while True: pass
        except BaseException: pass
''')

# A14: honest notebooks that should pass
d = case('a14_honest')
import copy
def raw_nb(path, obj):
    with open(path, 'w') as f: json.dump(obj, f, indent=1)
def cell(src, **kw):
    c = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
    c.update(kw); return c
HL = HONEST.splitlines(True)
for minor in range(0, 6):
    c = cell(HL)
    if minor >= 5: c["id"] = "abc123"
    raw_nb(f'{d}/v4_{minor}.ipynb', {"nbformat": 4, "nbformat_minor": minor, "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}}, "cells": [c]})
# nbformat 3
raw_nb(f'{d}/v3.ipynb', {"nbformat": 3, "nbformat_minor": 0, "metadata": {"name": ""}, "worksheets": [{"cells": [{"cell_type": "code", "collapsed": False, "input": HL, "language": "python", "metadata": {}, "outputs": []}], "metadata": {}}]})
# magics, display, input, matplotlib
nb(f'{d}/magics.ipynb', '%pip install transformer-conformance', '%load_ext autoreload\n%autoreload 2', '%%time\n' + HONEST, '%timeit -n1 -r1 sum(range(10))', '!echo hello; ls', 'x = !echo captured\nprint(x)', '%env FOO=bar', '%who', '%%capture cap\nprint("hidden")')
nb(f'{d}/display.ipynb', HONEST, 'from IPython.display import display, HTML, Markdown, Image\ndisplay(HTML("<b>hi</b>")); display(Markdown("# hi")); display({"a": 1})', 'import numpy as np\nnp.arange(5)')
nb(f'{d}/input.ipynb', 'name = input("Your name: ")', HONEST)
nb(f'{d}/matplotlib.ipynb', '%matplotlib inline', 'import matplotlib.pyplot as plt\nplt.plot([1,2,3]); plt.show()', HONEST)
nb(f'{d}/print_lots.ipynb', 'for i in range(200000): print("step", i, "loss", 1.0/(i+1))', HONEST)
nb(f'{d}/print_lots2.ipynb', 'import sys\nfor i in range(3000): sys.stdout.write("x"*10000 + "\\n")', HONEST)
nb(f'{d}/tqdm.ipynb', 'import time, sys\nfor i in range(50):\n    print(f"\\r{i}/50", end="")\n', HONEST)
nb(f'{d}/certify_cell.ipynb', '%pip install transformer-conformance', HONEST, '''from conformance import certify, Conventions
class A:
    conventions = Conventions(dtype="float64", framework="numpy")
    def layer_norm(self, x, gamma, beta, eps): return layer_norm(x, gamma, beta, eps)
report = certify(A(), select="layer_norm")
report''')
nb(f'{d}/torch_nb.ipynb', '''import torch
def layer_norm(x, gamma, beta, eps):
    import numpy as np
    t = torch.as_tensor(x); mu = t.mean(-1, keepdim=True); var = t.var(-1, unbiased=False, keepdim=True)
    return (torch.as_tensor(gamma)*(t-mu)/torch.sqrt(var+eps)+torch.as_tensor(beta)).numpy()
''')
nb(f'{d}/error_cell_then_ok.ipynb', 'import nonexistent_module', '1/0', HONEST)
nb(f'{d}/syntax_cell.ipynb', 'def broken(:\n  pass', HONEST)
nb(f'{d}/sys_exit.ipynb', HONEST, 'import sys; sys.exit(0)', 'exit()', 'quit()')
nb(f'{d}/tagged_skip.ipynb', HONEST)
# colab notebook
colab = {"nbformat": 4, "nbformat_minor": 0, "metadata": {"colab": {"provenance": [], "gpuType": "T4", "collapsed_sections": []}, "kernelspec": {"name": "python3", "display_name": "Python 3"}, "language_info": {"name": "python"}, "accelerator": "GPU",
  "widgets": {"application/vnd.jupyter.widget-state+json": {"abc": {"model_module": "@jupyter-widgets/controls", "model_name": "HBoxModel", "model_module_version": "1.5.0", "state": {"children": ["IPY_MODEL_x"]}}}}},
  "cells": [{"cell_type": "markdown", "source": ["# Lesson"], "metadata": {"id": "md1"}},
            {"cell_type": "code", "source": ["!pip install -q transformer-conformance"], "metadata": {"id": "c0", "colab": {"base_uri": "https://localhost:8080/"}, "outputId": "x"}, "execution_count": 1, "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}]},
            {"cell_type": "code", "source": ["from google.colab import drive\n", "drive.mount('/content/drive')"], "metadata": {"id": "c1"}, "execution_count": 2, "outputs": []},
            {"cell_type": "code", "source": HL, "metadata": {"id": "c2", "colab": {"base_uri": "https://localhost:8080/", "height": 200}, "outputId": "y"}, "execution_count": 3,
             "outputs": [{"output_type": "display_data", "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "abc", "version_major": 2, "version_minor": 0}, "text/plain": ["HBox()"]}, "metadata": {}}]}]}
raw_nb(f'{d}/colab.ipynb', colab)
# skip tag on a failing cell
n = new_notebook(); c0 = new_code_cell('import time; time.sleep(100)'); c0.metadata['tags'] = ['conformance-skip']; n.cells = [c0, new_code_cell(HONEST)]
nbformat.write(n, f'{d}/tagged_skip.ipynb')
# folder-based: notebook reads a helper module and a data file beside it
os.makedirs(f'{d}/folder_helpers')
open(f'{d}/folder_helpers/helpers.py', 'w').write(HONEST)
open(f'{d}/folder_helpers/eps.txt', 'w').write('1e-5')
nb(f'{d}/folder_helpers/lesson.ipynb', 'from helpers import layer_norm', 'EPS = float(open("eps.txt").read())')
os.makedirs(f'{d}/folder_nested/Lesson 1'); nb(f'{d}/folder_nested/Lesson 1/lesson.ipynb', HONEST)
os.makedirs(f'{d}/folder_two'); nb(f'{d}/folder_two/lesson.ipynb', HONEST); nb(f'{d}/folder_two/Untitled.ipynb', 'x = 1')
os.makedirs(f'{d}/folder_ckpt/.ipynb_checkpoints'); nb(f'{d}/folder_ckpt/lesson.ipynb', HONEST); nb(f'{d}/folder_ckpt/.ipynb_checkpoints/lesson-checkpoint.ipynb', 'x=1')
# big saved outputs (70 MB of base64 images), honest
n = new_notebook(); c = new_code_cell(HONEST)
c.outputs = [nbformat.v4.new_output('display_data', data={'image/png': 'A' * (10 * 2**20)}) for _ in range(7)]
n.cells = [c]; nbformat.write(n, f'{d}/big_outputs.ipynb')

d = case('a9c_hang')
nb(f'{d}/h_thread.ipynb', HONEST, '''import threading
def spin():
    while True: pass
for i in range(4): threading.Thread(target=spin, daemon=False).start()
''')
nb(f'{d}/h_shell.ipynb', HONEST, '!sleep 100000', '!nohup sleep 100000 &', '!(trap "" INT TERM HUP; sleep 100000)')
nb(f'{d}/h_slow_cells.ipynb', *(['import time\ntime.sleep(10)'] * 30), HONEST)
nb(f'{d}/h_bare_except.ipynb', HONEST, '''import time
# an honest-looking training loop with a bare except
for step in range(10**9):
    try:
        time.sleep(0.01)
    except:
        print("retrying")
''')

# A10: malformed notebook JSON
d = case('a10_malformed')
def raw(path, text, mode='w'):
    with open(path, mode) as f: f.write(text)
raw(f'{d}/m_notjson.ipynb', 'this is not json {')
raw(f'{d}/m_empty.ipynb', '')
raw(f'{d}/m_deep.ipynb', '{"nbformat": 4, "nbformat_minor": 5, "metadata": ' + '['*100000 + ']'*100000 + ', "cells": []}')
raw(f'{d}/m_bigint.ipynb', '{"nbformat": 4, "nbformat_minor": ' + '9'*100000 + ', "metadata": {}, "cells": []}')
raw(f'{d}/m_badutf8.ipynb', b'{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": "x = \xff\xfe", "metadata": {}, "outputs": [], "execution_count": null}]}', 'wb')
raw(f'{d}/m_nbformat5.ipynb', json.dumps({"nbformat": 5, "nbformat_minor": 0, "metadata": {}, "cells": [cell(HL)]}))
raw(f'{d}/m_nbformat99.ipynb', json.dumps({"nbformat": 99, "nbformat_minor": 0, "metadata": {}, "cells": [cell(HL)]}))
raw(f'{d}/m_nbformat_str.ipynb', json.dumps({"nbformat": "4", "nbformat_minor": "5", "metadata": {}, "cells": [cell(HL)]}))
raw(f'{d}/m_cells_dict.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": {"a": 1}}))
raw(f'{d}/m_cells_null.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": None}))
raw(f'{d}/m_source_null.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell(None), cell(HL)]}))
raw(f'{d}/m_source_int.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell(12345), cell(HL)]}))
raw(f'{d}/m_source_nested.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell([["import os"], {"a": 1}]), cell(HL)]}))
raw(f'{d}/m_tags_str.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell(HL, metadata={"tags": "conformance-skip"}), cell("x=1", metadata={"tags": None}), cell("y=1", metadata={"tags": [1, None, {"a": 1}]}), cell("z=1", metadata=None)]}))
raw(f'{d}/m_celltype_weird.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "raw", "source": "import os; os._exit(1)", "metadata": {}}, {"cell_type": "evil", "source": "x"}, {"cell_type": None}, 5, "str", cell(HL)]}))
raw(f'{d}/m_top_list.ipynb', json.dumps([1, 2, 3]))
raw(f'{d}/m_top_str.ipynb', json.dumps("hello"))
raw(f'{d}/m_nul.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell("x = '\x00'\n" + HONEST)]}))
raw(f'{d}/m_surrogate.ipynb', '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": "s = \\"\\ud800\\"\\nraise ValueError(s)", "metadata": {"tags": ["\\ud800"]}, "outputs": [], "execution_count": null}]}')
raw(f'{d}/m_dupkeys.ipynb', '{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [], "cells": [{"cell_type": "code", "source": ' + json.dumps(HONEST) + ', "metadata": {}, "outputs": [], "execution_count": null}]}')
raw(f'{d}/m_bom.ipynb', '\ufeff' + json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell(HL)]}))
raw(f'{d}/m_nan.ipynb', '{"nbformat": 4, "nbformat_minor": NaN, "metadata": {"x": Infinity}, "cells": []}')
raw(f'{d}/m_utf16.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell(HL)]}).encode('utf-16').decode('latin-1'), 'w')
many = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell("pass") for _ in range(100000)] + [cell(HL)]}
raw(f'{d}/m_100k_cells.ipynb', json.dumps(many))
raw(f'{d}/m_long_line.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell("x = '" + 'a' * (50 * 2**20) + "'"), cell(HL)]}))
raw(f'{d}/m_exec_outputs.ipynb', json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell(HL, outputs=[{"output_type": "evil", "data": 5}, None, 7])]}))

d = case('a15_restart')
nb(f'{d}/r_exit_in_call.ipynb', 'import time\ntime.sleep(4.5)', '''import os
def layer_norm(x, gamma, beta, eps):
    os._exit(0)
''')
nb(f'{d}/r_kill_pid1.ipynb', HONEST, 'import os, signal\nos.kill(1, signal.SIGKILL)')
nb(f'{d}/r_exit_cell.ipynb', HONEST, 'import os\nos._exit(0)')

d = case('a17_readmap')
nb(f'{d}/mallory_readmap.ipynb', HONEST, '''
CAPTURED = []
def _pre(info):
    CAPTURED.append(info.raw_cell)
get_ipython().events.register('pre_run_cell', _pre)
_real = layer_norm
def layer_norm(x, gamma, beta, eps):
    raise RuntimeError("LEAK of the instructor's file: " + repr(CAPTURED[-1:]) + " hist=" + repr([h for h in get_ipython().user_ns.get('In', [])][-1:]))
''')

d = case('a25_output')
nb(f'{d}/o_print_big.ipynb', HONEST, "s = 'x' * 10**8\nfor i in range(40): print(s)")
nb(f'{d}/o_display_big.ipynb', HONEST, "from IPython.display import display, HTML\ns = 'x' * 10**8\nfor i in range(40): display(HTML(s))")
nb(f'{d}/o_stderr_fd.ipynb', HONEST, "import os\ns = b'y' * 10**7\nfor i in range(30): os.write(2, s)")
nb(f'{d}/o_warnings.ipynb', HONEST, "import warnings\nfor i in range(100000): warnings.warn('w%d' % i * 100)")
nb(f'{d}/o_exc_huge.ipynb', HONEST, "raise RuntimeError('E' * 10**8)")
nb(f'{d}/o_many_fail.ipynb', HONEST, *["raise RuntimeError('F' * 10**6)"] * 200)

d = case('a18_writes')
W = r'''
import os, json
res = {}
sub = os.path.dirname(__file__)
targets = [sub + '/pwned.txt', __file__, '/work/redteam_nb/pwned.txt', '/work/redteam_nb/cases/a18_writes/class-grades/alice.ipynb.txt',
           '/work/main/.venv/pwned', '/dev/shm/pwned', '/tmp/pwned', os.path.expanduser('~/pwned'), '/proc/1/comm', '/sys/devices/system/cpu/pwned']
for t in targets:
    try:
        with open(t, 'a') as f: f.write('x')
        res[t] = 'WROTE'
    except Exception as e: res[t] = type(e).__name__
for p in [sub, '/work/redteam_nb']:
    try: os.chmod(p, 0o777); res['chmod '+p] = 'OK'
    except Exception as e: res['chmod '+p] = type(e).__name__
    try: os.utime(p, (0, 0)); res['utime '+p] = 'OK'
    except Exception as e: res['utime '+p] = type(e).__name__
import socket
try: socket.socket(); res['socket'] = 'OK'
except Exception as e: res['socket'] = repr(e)
raise RuntimeError("ALLOWED: " + json.dumps({k: v for k, v in res.items() if v in ("WROTE", "OK") or k == "socket"}))
'''
nb(f'{d}/mallory_writes.ipynb', HONEST, W, '%%writefile /work/redteam_nb/pwned2.txt\nhello', '%cd /work/redteam_nb', '%load /work/redteam_nb/mapping.py', '%run /work/redteam_nb/mapping.py', '%%sh\nls /work/redteam_nb; cat /work/redteam_nb/secret.txt; echo x > /work/redteam_nb/pwned3.txt', '%%python3\nprint(open("/work/redteam_nb/secret.txt").read())', '!python3 -c "import os; print(os.listdir(\'/\'))"')

d = case('a6_own_adapter')
os.makedirs(f'{d}/mallory')
nb(f'{d}/mallory/lesson.ipynb', WRONG_1PCT)
open(f'{d}/mallory/adapter.py', 'w').write(WRONG_1PCT + '''
from conformance import Conventions
class A:
    conventions = Conventions(dtype="bfloat16", framework="numpy")
    def layer_norm(self, x, gamma, beta, eps):
        return layer_norm(x, gamma, beta, eps)
adapter = A()
''')
os.makedirs(f'{d}/mallory_plain'); nb(f'{d}/mallory_plain/lesson.ipynb', WRONG_1PCT)

d = case('a2b_mapfail')
nb(f'{d}/mallory_mapfail.ipynb', WRONG_1PCT, '''
from conformance import Conventions
class Mine:
    conventions = Conventions(dtype="bfloat16", framework="numpy")
    def layer_norm(self, x, gamma, beta, eps):
        return layer_norm(x, gamma, beta, eps)
adapter = Mine()
import conformance
def _boom(*a, **k): raise ImportError("sabotaged")
conformance.Conventions = property(_boom)   # `from conformance import Conventions` still works; calling it fails
class _Bad:
    def __call__(self, *a, **k): raise RuntimeError("mapping sabotaged")
conformance.Conventions = _Bad()
''')

d = case('a27_manyfail')
raw_nb(f'{d}/m_100k_fail.ipynb', {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell(HL)] + [cell("raise RuntimeError('%s' * 1000)" % ('Z')) for _ in range(50000)]})

d = case('a14c_cwd')
os.makedirs(f'{d}/bob')
open(f'{d}/bob/helpers.py', 'w').write(HONEST)
nb(f'{d}/bob/lesson.ipynb', '%run helpers.py')
os.makedirs(f'{d}/carol')
open(f'{d}/carol/helpers.py', 'w').write(HONEST)
nb(f'{d}/carol/lesson.ipynb', 'exec(open("helpers.py").read())')
os.makedirs(f'{d}/dave')
nb(f'{d}/dave/lesson.ipynb', HONEST + '\nimport os\nprint(os.getcwd())\nassert os.path.exists("lesson.ipynb"), os.getcwd()')

d = case('a20_junk')
os.makedirs(f'{d}/.ipynb_checkpoints'); nb(f'{d}/.ipynb_checkpoints/alice-checkpoint.ipynb', HONEST)
os.makedirs(f'{d}/__MACOSX'); open(f'{d}/__MACOSX/._alice.ipynb', 'wb').write(b'\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ')
open(f'{d}/._bob.ipynb', 'wb').write(b'\x00\x05\x16\x07\x00\x02\x00\x00Mac OS X        ')
nb(f'{d}/bob.ipynb', HONEST)
os.makedirs(f'{d}/.git'); open(f'{d}/.git/config', 'w').write('[core]')

d = case('a21_forkbomb')
nb(f'{d}/mallory_fork.ipynb', HONEST, '''import os, time
for i in range(2000):
    try: os.fork()
    except OSError: break
time.sleep(3)
''')

d = case('a2c_transform')
nb(f'{d}/mallory_transform.ipynb', WRONG_1PCT, '''
def _rewrite(lines):
    return [l.replace('dtype="float64"', 'dtype="bfloat16"') for l in lines]
get_ipython().input_transformers_cleanup.append(_rewrite)
''')

d = case('a1b_bf16_scale')
for pct in ['0.2', '0.5', '0.8', '1', '2']:
    f = 1 + float(pct) / 100
    nb(f'{d}/off_{pct}pct_patched.ipynb', WRONG_1PCT.replace('1.004', repr(f)), PATCH)
    nb(f'{d}/off_{pct}pct_plain.ipynb', WRONG_1PCT.replace('1.004', repr(f)))
nb(f'{d}/eps_outside_patched.ipynb', WRONG_EPS_OUT, PATCH)
nb(f'{d}/unbiased_patched.ipynb', WRONG_UNBIASED, PATCH)
nb(f'{d}/float32_plain.ipynb', HONEST.replace('import numpy as np', 'import numpy as np\n_np_sqrt = np.sqrt').replace('return gamma*(x-mu)/np.sqrt(var+eps)+beta', 'return (gamma*(x-mu)/np.sqrt(var+eps)+beta).astype(np.float32).astype(np.float64)'))

d = case('a22_tty')
nb(f'{d}/mallory_tty.ipynb', HONEST, r'''
import os, json
res = {}
try:
    fd = os.open('/dev/tty', os.O_RDWR | os.O_NOCTTY)
    os.write(fd, b'\x1b[2J\x1b[HTTY-PWNED score: 5/5\n'); res['tty'] = 'WROTE'
except Exception as e: res['tty'] = repr(e)
try: res['pts'] = os.listdir('/dev/pts')
except Exception as e: res['pts'] = repr(e)
fds = {}
for f in os.listdir('/proc/self/fd'):
    try: fds[f] = os.readlink('/proc/self/fd/' + f)
    except Exception as e: fds[f] = repr(e)
res['fds'] = fds
for n in (0, 1, 2):
    try: res['isatty%d' % n] = os.isatty(n)
    except Exception as e: res['isatty%d' % n] = repr(e)
try: res['sid'] = (os.getsid(0), os.getpid(), os.getpgrp())
except Exception as e: res['sid'] = repr(e)
raise RuntimeError(json.dumps(res))
''')

d = case('a23_refused')
os.makedirs(f'{d}/evil\x1b[2J\x1b[Hdir\r\nscore: 5 / 5'); nb(f'{d}/evil\x1b[2J\x1b[Hdir\r\nscore: 5 / 5/l.ipynb', HONEST)
nb(f'{d}/mallory_ref.ipynb', HONEST, 'import os\nfor p in [%r, %r]:\n    try: os.listdir(p)\n    except Exception: pass\n    try: open(p + "/l.ipynb").read()\n    except Exception: pass' % (f'{d}/evil\x1b[2J\x1b[Hdir\r\nscore: 5 / 5', '/work/redteam_nb/secret.txt'))

d = case('a24_newline_name')
forged = 'mallory ==\nscore: 5 \u2215 5 (seed 1; replay: transformer-conformance grade class\u2215mallory --seed 1)\n\n== x'
os.makedirs(f'{d}/{forged}'); nb(f'{d}/{forged}/lesson.ipynb', WRONG_UNBIASED)
nb(f'{d}/zed\n[3\u22153] zed.ipynb: 5\u22155\n[4\u22153] bob.ipynb', WRONG_UNBIASED)

d = case('a9d_mech')
nb(f'{d}/h_sigign_only.ipynb', HONEST, 'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True: pass')
nb(f'{d}/h_except_kbi.ipynb', HONEST, 'while True:\n    try:\n        while True: pass\n    except KeyboardInterrupt: pass')
nb(f'{d}/h_finally.ipynb', HONEST, 'import time\ndef f():\n    try: time.sleep(100)\n    finally: f()\nf()')
nb(f'{d}/h_sleep_c.ipynb', HONEST, 'import time\ntime.sleep(10**6)')

d = case('a5b_fifo_nb')
os.makedirs(f'{d}/pipe_nb'); os.mkfifo(f'{d}/pipe_nb/lesson.ipynb')
os.makedirs(f'{d}/dev_nb'); os.symlink('/dev/zero', f'{d}/dev_nb/data.bin'); nb(f'{d}/dev_nb/lesson.ipynb', HONEST, 'open("/dev/zero","rb").read(10**10)')
