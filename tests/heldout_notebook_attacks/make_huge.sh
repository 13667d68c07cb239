#!/bin/bash
# recreate the 2 GiB sparse notebook (8 KiB on disk) used by attack A11
/work/main/.venv/bin/python -c "
f=open('/work/redteam_nb/cases/a11_hugefile/class/zz_huge.ipynb','wb'); f.write(b'{\"nbformat\": 4, \"nbformat_minor\": 5, \"metadata\": {\"pad\": \"'); f.truncate(2*2**30); f.seek(0,2); f.write(b'\"}, \"cells\": []}')"
