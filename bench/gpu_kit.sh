#!/usr/bin/env bash
# Packs what bench/gpu_compare.sh needs on a lent GPU machine into one folder and an archive of
# it (OUT.tar.xz, about 13 MB, where the folder is about 63 MB of the 64 MiB the device tool
# carries): this build's
# tinylm and bench_serve (stripped), the libraries they load that such a machine may lack
# (oneDNN, Open MPI, libgomp, libstdc++; not the C library, which the machine has), and the
# Vulkan loader, with a wrapper that points the binaries at them.
#
#   bench/gpu_kit.sh [OUT]        # OUT: build/gpu-kit
#
# then, on the GPU machine (the device tool carries the archive: an ignored path, named in
# `carry`):
#
#   tar xJf build/gpu-kit.tar.xz -C build && build/gpu-kit/run bench/gpu_compare.sh \
#     build/gpu-kit/tinylm build/gpu-kit/bench_serve
#
# OUT/run sets LD_LIBRARY_PATH and TINYLM_VULKAN_LOADER and runs its arguments; the driver (the
# GPU's Vulkan ICD) is the machine's own. Prints the kit's size: the device tool carries 64 MiB.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$here/build/gpu-kit}
tinylm=$here/build/release/tinylm
serve=$here/build/bench/bench/bench_serve
for f in "$tinylm" "$serve"; do
  [ -x "$f" ] || { echo "gpu_kit.sh: $f is missing: build the release and bench presets first" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$out/lib"
strip -o "$out/tinylm" "$tinylm"
strip -o "$out/bench_serve" "$serve"
# Every library either binary loads, but the C library's own (libc, libm, the dynamic loader).
{ ldd "$tinylm"; ldd "$serve"; } | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.* | libm.so.* | ld-linux* | libpthread.so.* | libdl.so.* | librt.so.*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
loader=$(ldconfig -p | awk '/libvulkan\.so\.1 / && !found {print $NF; found = 1}')
[ -n "$loader" ] || { echo "gpu_kit.sh: no libvulkan.so.1 here (Debian: libvulkan1)" >&2; exit 1; }
cp -L "$loader" "$out/lib/libvulkan.so.1"
strip --strip-unneeded "$out"/lib/*.so* 2>/dev/null || true
cat > "$out/run" <<'EOF'
#!/usr/bin/env bash
# Runs its arguments with the kit's libraries and Vulkan loader (bench/gpu_kit.sh).
kit=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH="$kit/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export TINYLM_VULKAN_LOADER="$kit/lib/libvulkan.so.1"
exec "$@"
EOF
chmod +x "$out/run"
tar cJf "$out.tar.xz" -C "$(dirname "$out")" "$(basename "$out")"
du -sh "$out" "$out.tar.xz" | awk '{print "gpu_kit.sh: " $2 ": " $1}'
