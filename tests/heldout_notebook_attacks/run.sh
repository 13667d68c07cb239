#!/bin/bash
# usage: run.sh CASE [extra args]; grades cases/CASE/class into cases/CASE/class-grades
c=$1; shift
cd /work/redteam_nb/cases/$c || exit 1
rm -rf class-grades
start=$(date +%s.%N)
timeout -k 5 ${TO:-300} /work/main/.venv/bin/transformer-conformance grade class --adapter ${MAP:-/work/redteam_nb/mapping.py} -k ${K:-layer_norm} --cell-timeout ${CT:-5} --jobs 2 "$@" > stdout.txt 2> stderr.txt
rc=$?
end=$(date +%s.%N)
echo "case $c rc=$rc time=$(echo "$end - $start" | bc)s"
cat stdout.txt; echo ---stderr; tail -c 3000 stderr.txt
