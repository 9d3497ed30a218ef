#!/usr/bin/env bash
# Makes DEST a copy of the installed venv SOURCE, so that `make install` into DEST with another
# lock downloads and installs only the packages whose pins differ: pip keeps every `name==version`
# that is already there. requirements/lock-modern.txt differs from requirements/lock.txt in six
# packages out of about 160 (transformers, tokenizers, huggingface_hub and their new needs), so the
# modern lane (.ci/modern_lane.sh) fetches a few MB instead of torch and its CUDA wheels again.
#
#   scripts/seed_venv.sh .venv .venv-modern
#
# A venv names its own folder in its console scripts' first line and in bin/activate*; those are
# rewritten to DEST. The interpreter links (bin/python -> the base Python) stay as they are.
# DEST must not exist; the install stamps of SOURCE (.installed-*) are not copied.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: scripts/seed_venv.sh SOURCE DEST" >&2; exit 2; }
[ -x "$1/bin/python" ] || { echo "seed_venv.sh: $1 is not a venv (no $1/bin/python)" >&2; exit 2; }
[ ! -e "$2" ] || { echo "seed_venv.sh: $2 exists; remove it or pick another folder" >&2; exit 2; }
source=$(cd "$1" && pwd)
cp -a "$source" "$2"
dest=$(cd "$2" && pwd)
rm -f "$dest"/.installed*
# Text files only (-I): the console scripts' `#!$source/bin/python` and activate's VIRTUAL_ENV.
find "$dest/bin" -maxdepth 1 -type f -print0 | xargs -0 grep -lIF "$source" | while read -r file; do
  sed -i "s|$source|$dest|g" "$file"
done
sed -i "s|$source|$dest|g" "$dest/pyvenv.cfg"
echo "seed_venv.sh: $dest starts as a copy of $source"
