#!/usr/bin/env bash
# Build tiny fatbins with nvcc, one per target variant and compression mode,
# and list each with cuobjdump: the ground truth for which entry-header flags
# mean `a` (arch-specific), `f` (family) and which compression (docs/binaries.md).
# Needs the CUDA toolkit (nvcc 13); writes into $1 (default ./nvcc).
# fixtures/binaries/nvcc_zstd.fatbin is its fixture_size.fatbin and nvcc_lz4.fatbin its
# mode_speed.fatbin (nvcc 13.0.88).
set -u
out=${1:-nvcc}
mkdir -p "$out"
cd "$out" || exit 1
cat > k.cu <<'CU'
__global__ void twice(float* p) { p[threadIdx.x] *= 2.f; }
CU
nvcc --version | tail -2
try() {  # try NAME NVCC-ARGS...: build NAME.fatbin, list it
  local name=$1; shift
  if nvcc -fatbin -o "$name.fatbin" k.cu "$@" 2> "$name.err"; then
    echo "== $name: $*"
    cuobjdump --list-elf "$name.fatbin"; cuobjdump --list-ptx "$name.fatbin"
    rm -f "$name.err"
  else
    echo "== $name: FAILED: $*"; head -3 "$name.err"; rm -f "$name.err" "$name.fatbin"
  fi
}
for t in 75 80 89 90 90a 100 100a 100f 103 103a 103f 110 110a 110f 120 120a 120f 121 121a 121f; do
  try "sass_sm_$t" --compress-mode=none -gencode "arch=compute_$t,code=sm_$t"
  try "ptx_compute_$t" --compress-mode=none -gencode "arch=compute_$t,code=compute_$t"
done
for mode in default size speed balance none; do
  try "mode_$mode" "--compress-mode=$mode" -gencode "arch=compute_90a,code=[sm_90a,compute_90a]"
done
try legacy_compress_all -Xfatbin=-compress-all -gencode "arch=compute_90a,code=[sm_90a,compute_90a]"
targets=(-gencode "arch=compute_80,code=[sm_80,compute_80]"
         -gencode "arch=compute_90a,code=[sm_90a,compute_90a]"
         -gencode "arch=compute_100f,code=[sm_100f,compute_100f]"
         -gencode "arch=compute_120a,code=sm_120a")
try fixture_plain --compress-mode=none "${targets[@]}"
try fixture_default --compress-mode=default "${targets[@]}"
try fixture_size --compress-mode=size "${targets[@]}"
try fixture_speed --compress-mode=speed "${targets[@]}"
ls -la
