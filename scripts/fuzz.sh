#!/usr/bin/env bash
# Coverage-guided fuzzing of every input surface (fuzz/targets.py) for SECONDS in total.
#   bash scripts/fuzz.sh 600      # ten minutes, split between the six targets
# Corpora live in fuzz/corpus/TARGET (seeded from the examples and the test corpora, and
# grown by each run); a crash leaves crash-* files in fuzz/findings/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
py=.venv/bin/python
[[ -x $py ]] || py=python3
targets=(parser formatter checker keg cli sync)
each=$(( seconds / ${#targets[@]} ))
(( each >= 1 )) || each=1
$py fuzz/seed.py fuzz/corpus >/dev/null
mkdir -p fuzz/findings
for t in "${targets[@]}"; do
  echo "fuzzing $t for ${each}s"
  $py fuzz/run.py "$t" -max_total_time="$each" -rss_limit_mb=4096 -timeout=20 \
    -artifact_prefix=fuzz/findings/"$t"- fuzz/corpus/"$t" 2>&1 | grep -E "^#[0-9]+.*(DONE|pulse)|ERROR|Exception|crash" | tail -3
done
