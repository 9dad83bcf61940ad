#!/usr/bin/env bash
# The command line against age's (Debian's `age`, the Go reference), as
# processes: the same file encrypted and decrypted by each, wall time per
# run, rounds interleaved (every variant once per round, in a rotating
# order), medians and ranges.
#
#     cli/bench.sh [SIZE_MIB] [ROUNDS]        (default 1024 MiB, 7 rounds)
#
# BEFORE=PATH adds another build of the command (an earlier commit's
# binary, copied aside) with default settings, in the same rounds: a
# change measured before and after in one run.
# Needs `age` and `age-keygen` (apt-get install age); rage (`cargo install
# rage`, the Rust implementation) is measured too when it is on the PATH,
# with the same age identity. Work files go under
# cli/target/bench/ (SIZE_MIB of plaintext and three ciphertexts of it);
# input files are read once first so that every run reads from the page
# cache; output goes to /dev/null, so the disk is not measured.
set -euo pipefail
cd "$(dirname "$0")"
mib="${1:-1024}"
rounds="${2:-7}"
command -v age >/dev/null && command -v age-keygen >/dev/null \
    || { echo "needs age and age-keygen: apt-get install age" >&2; exit 1; }
cargo build --release --quiet
bin="$PWD/target/release/cipherio"
work="$PWD/target/bench"
mkdir -p "$work"
cd "$work"
if [ "$(stat -c %s plain 2>/dev/null || echo 0)" != "$((mib << 20))" ]; then
    head -c "$((mib << 20))" /dev/urandom > plain
fi
rm -f aes.key chacha.key age.key
"$bin" keygen -o aes.key                                  # the default: AES-256-GCM
"$bin" keygen --algorithm chacha20poly1305 -o chacha.key  # age's AEAD
age-keygen -o age.key 2>/dev/null
recipient="$(age-keygen -y age.key)"
"$bin" encrypt -q -k aes.key plain > aes.cio
"$bin" encrypt -q -k chacha.key plain > chacha.cio
age -r "$recipient" plain > plain.age
cat plain aes.cio chacha.cio plain.age > /dev/null

declare -A cmd=(
    ["encrypt cipherio"]="$bin encrypt -q -k aes.key plain"
    ["encrypt cipherio --threads 2"]="$bin encrypt -q -j 2 -k aes.key plain"
    ["encrypt cipherio chacha20poly1305"]="$bin encrypt -q -k chacha.key plain"
    ["encrypt age"]="age -r $recipient plain"
    ["decrypt cipherio"]="$bin decrypt -q -k aes.key aes.cio"
    ["decrypt cipherio --threads 2"]="$bin decrypt -q -j 2 -k aes.key aes.cio"
    ["decrypt cipherio chacha20poly1305"]="$bin decrypt -q -k chacha.key chacha.cio"
    ["decrypt age"]="age -d -i age.key plain.age"
)
names=("encrypt cipherio" "encrypt cipherio --threads 2" "encrypt cipherio chacha20poly1305" "encrypt age"
       "decrypt cipherio" "decrypt cipherio --threads 2" "decrypt cipherio chacha20poly1305" "decrypt age")
if [ -n "${BEFORE:-}" ]; then
    cmd["encrypt cipherio before"]="$BEFORE encrypt -q -k aes.key plain"
    cmd["decrypt cipherio before"]="$BEFORE decrypt -q -k aes.key aes.cio"
    names+=("encrypt cipherio before" "decrypt cipherio before")
fi
if command -v rage >/dev/null; then
    cmd["encrypt rage"]="rage -r $recipient plain"
    cmd["decrypt rage"]="rage -d -i age.key plain.age"
    names+=("encrypt rage" "decrypt rage")
fi
: > times.tsv
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) CPUs; $mib MiB; $rounds rounds" >&2
for ((r = 0; r < rounds; r++)); do
    n=${#names[@]}
    for ((i = 0; i < n; i++)); do
        name="${names[$(((i + r) % n))]}"
        start=$(date +%s%N)
        ${cmd[$name]} > /dev/null
        end=$(date +%s%N)
        printf '%s\t%s\n' "$name" "$(((end - start) / 1000))" >> times.tsv
    done
    echo "round $((r + 1))/$rounds done" >&2
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
python3 - "$mib" <<'PY'
import statistics, sys
mib = int(sys.argv[1])
runs = {}
for line in open("times.tsv"):
    name, us = line.rstrip("\n").split("\t")
    runs.setdefault(name, []).append(int(us) / 1e6)
med = {k: statistics.median(v) for k, v in runs.items()}
print(f"| {mib} MiB, output to /dev/null | median s | min-max s | MiB/s (median) | age's median / this median |")
print("|---|---:|---:|---:|---:|")
for name, v in runs.items():
    age = med[name.split()[0] + " age"]
    print(f"| {name} | {med[name]:.3f} | {min(v):.3f}-{max(v):.3f} | {mib / med[name]:.0f} | {age / med[name]:.2f}x |")
PY
