#!/usr/bin/env bash
# Installs the Debian 12 packages tinylm needs to build and test. Idempotent and quiet when
# everything is already present. Run as root (or with sudo available).
set -euo pipefail

packages=(
  g++ cmake ninja-build pkg-config clang-format
  clang libclang-rt-14-dev libomp-dev
  libopenmpi-dev openmpi-bin
  libgtest-dev libgmock-dev libbenchmark-dev
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev libdnnl-dev zlib1g-dev
  libcpp-httplib-dev chromium nodejs librsvg2-dev
  libcurl4-openssl-dev libssl-dev curl
  libvulkan-dev glslc mesa-vulkan-drivers vulkan-validationlayers
)
# The Vulkan loader and headers and glslc build the GPU backend (TINYLM_VULKAN); Mesa's lavapipe
# (mesa-vulkan-drivers) is a Vulkan device on the CPU that the GPU tests run on, with the
# Khronos validation layer. cpp-httplib is the serve tests' HTTP client; chromium and nodejs run the web page's browser test
# (tests/browser). clang builds the sanitizer build (tests and fuzz targets; its OpenMP is libomp); Open MPI
# runs training over several processes (mpirun; the tests start 2 and 4 locally). Extra
# packages for the side-by-side benchmarks come with --bench-compare (--fuzz is still accepted,
# and now adds nothing). The PyTorch peer gets OpenBLAS: with only Debian's reference libblas3
# its f32 products run several times slower. nanoGPT's data preparation imports requests, and
# bench/compare/nanogpt_char.sh does its arithmetic with bc. toml++ (libtomlplusplus-dev) reads
# `tinylm train --config FILE.toml`; the library links its shared libtomlplusplus3. librsvg2-dev
# (with cairo) rasterises `tinylm plot --out FIG.png`. libcurl (OpenSSL flavour) and OpenSSL's
# libcrypto fetch and check models from the Hugging Face Hub (tinylm download, --model hf:REPO);
# curl sends the README's chat request in its walkthrough test.
for arg in "$@"; do
  case "$arg" in
    --fuzz) ;;
    --bench-compare) packages+=(python3 python3-torch python3-numpy python3-requests libopenblas0-pthread bc) ;;
    *) echo "install-deps.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
