#!/bin/bash
# The sweep (make_models.py --sweep) through ort_compare, one process per
# model, and the geometric mean of the ratios over all of them.
#
#   /usr/bin/python3 bench/make_models.py --sweep /tmp/models/sweep
#   bazel build -c opt //bench:ort_compare //runtime/server:glintd
#   bench/sweep.sh /tmp/models/sweep [threads] [iters] [rounds] [GLINTD_MODELS]
#
# GLINTD_MODELS (comma-separated) also run through glintd. One process per
# model: in one process, a small model timed after a large one (>= ~20 ms a
# run) ran 2-10x slower in-process on this shared machine (its standalone
# time came back in a fresh process), which would charge the sweep for the
# order of its models.
set -euo pipefail
dir=$1
threads=${2:-2}
iters=${3:-5}
rounds=${4:-3}
remote=${5:-none}
bin=bazel-bin/bench/ort_compare
echo "load average at start: $(cat /proc/loadavg)"
printf '%-24s %9s %9s %9s %8s %8s  %s\n' model glint_ms glintd_ms ort_ms \
  ratio ratio_d max_rel_diff
status=0
for f in "$dir"/*.onnx; do
  m=$(basename "$f" .onnx)
  "$bin" "$dir" "$threads" "$iters" "$m" "$rounds" "--glintd=$remote" \
    2>/dev/null | grep "^$m " || status=1
done | tee /tmp/glint_sweep_$$.txt
awk '{ if ($5 > 0) { s += log($5); n++; if ($5 > 1.0) above = above " " $1 }
       if ($6 != "-") { sd += log($6); nd++ } }
     END { printf "geomean ratio %.2f over %d models (above 1.0:%s), " \
                  "geomean ratio_d %.2f over %d\n", exp(s / n), n,
                  (above == "" ? " none" : above), (nd ? exp(sd / nd) : 0), nd }' \
  /tmp/glint_sweep_$$.txt
rm -f /tmp/glint_sweep_$$.txt
echo "threads $threads, $rounds rounds of $iters iterations each way;" \
  "load average at end: $(cat /proc/loadavg)"
exit $status
