#!/usr/bin/env bash
# Export time per model through the PyTorch harness (what `agent model
# describe torchvision:NAME` pays once per model and size before caching):
# agent/harness/export_onnx.py for every model of the CNN set, as a Markdown
# table. Needs /usr/bin/python3 (or $TRAINCAST_PYTHON) with torch.
# MODELS (comma- or space-separated) limits it to some models.
#
#   bench/model_export.sh > docs/reports/model-export-time.md
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/lib.sh
. "$root/bench/lib.sh"
py=${TRAINCAST_PYTHON:-/usr/bin/python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
models=$(echo "${MODELS:-}" | tr ',' ' ')
[ -n "$models" ] || models=$("$py" -c "import sys; sys.path.insert(0, '$root/agent/harness');
import make_test_data; print(' '.join(make_test_data.CNN_SET))")
echo "# Model export time"
echo
echo "\`bench/model_export.sh\` on $(bench_host_load), $(date -u +%Y-%m-%d), with" \
     "$("$py" -c 'import torch, torchvision; print("torch", torch.__version__, "torchvision", torchvision.__version__)')."
echo "Wall-clock seconds of one \`export_onnx.py NAME\` process each (Python start, import of"
echo "torch, building the model without initializing weights, tracing in training mode, writing"
echo "the weight-free file). The machine is shared: an upper bound, not a stable figure."
echo
echo "| model | mode | bytes | seconds |"
echo "| --- | --- | ---: | ---: |"
start=$(date +%s%N)
for m in $models; do
  t0=$(date +%s%N)
  "$py" "$root/agent/harness/export_onnx.py" "$m" -o "$tmp/$m.onnx" --json > "$tmp/$m.json" \
    2> "$tmp/$m.err"
  t1=$(date +%s%N)
  mode=$(sed 's/.*"mode": "\([^"]*\)".*/\1/' "$tmp/$m.json")
  ms=$(( (t1 - t0) / 1000000 ))
  printf '| %s | %s | %s | %d.%d |\n' "$m" "$mode" "$(wc -c < "$tmp/$m.onnx")" \
    $((ms / 1000)) $((ms % 1000 / 100))
done
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
echo
echo "All $(echo $models | wc -w) models: $((ms / 1000)).$((ms % 1000 / 100)) s."
