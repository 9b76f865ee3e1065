#!/usr/bin/env bash
# Bootstrap what the project needs on a fresh machine: .venv from the lock file, and a Chromium
# that Playwright can drive. Idempotent: a second run with nothing changed takes about a second.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
VENV="$ROOT/.venv"
PY=${PYTHON:-python3}
STAMP="$VENV/.refinery-lock.sha256"
want=$(cat requirements.lock pyproject.toml | sha256sum | cut -d' ' -f1)

if [ ! -x "$VENV/bin/python" ]; then
  echo "[bootstrap] creating $VENV"
  "$PY" -m venv "$VENV"
fi
if [ ! -x "$VENV/bin/uv" ]; then
  "$VENV/bin/pip" install -q --disable-pip-version-check "uv==0.13.8"
fi
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$want" ]; then
  echo "[bootstrap] installing locked dependencies (first run downloads about 6 GB)"
  "$VENV/bin/uv" pip sync --python "$VENV/bin/python" requirements.lock
  # fasttext-predict (left out of the lock) and fasttext-numpy2 both ship a `fasttext` module; a
  # venv that once had the former may have lost files of the latter when sync removed it.
  ft=$(grep -E '^fasttext-numpy2==' requirements.lock)
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" --no-deps --reinstall-package fasttext-numpy2 "$ft"
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" --no-deps -e .
  echo "$want" > "$STAMP"
fi

# Bytecode for the installed packages, once per lock: uv installs none, and where
# PYTHONDONTWRITEBYTECODE is set (as on this project's machines) every process compiled what it
# imported from source again: 8.4 s of CPU to import Dagster, torch and Beam against 4.6 s with
# bytecode, in each of the demo's, the suite's and Beam's many processes. The project's own
# modules are compiled on every bootstrap (only what changed is redone). Files that are not
# Python 3 (some packages ship templates) are skipped.
PYC_STAMP="$VENV/.refinery-bytecode.sha256"
if [ ! -f "$PYC_STAMP" ] || [ "$(cat "$PYC_STAMP")" != "$want" ]; then
  echo "[bootstrap] compiling the installed packages to bytecode (once per lock file)"
  "$VENV/bin/python" -m compileall -q -j 0 "$VENV/lib" >/dev/null 2>&1 || true
  echo "$want" > "$PYC_STAMP"
fi
"$VENV/bin/python" -m compileall -q -j 0 common crawlers filters synth training pipelines sampleweb \
  >/dev/null 2>&1 || true

# Chromium for Playwright: Playwright's own browser if it was installed, else the system one.
if ! "$VENV/bin/python" -m common.browser >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[bootstrap] installing Debian's chromium for Playwright"
    (apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; })
  else
    echo "[bootstrap] no Chromium found: run 'playwright install chromium' or install your distribution's chromium" >&2
    exit 1
  fi
fi

# bubblewrap: the sandbox model-written code runs in (synth/sandbox.py refuses to run without it).
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[bootstrap] installing Debian's bubblewrap (the code sandbox)"
    (apt-get install -y -q bubblewrap >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q bubblewrap >/dev/null; })
  else
    echo "[bootstrap] no bubblewrap: install your distribution's bubblewrap; until then generated code is refused, never run unsandboxed" >&2
  fi
fi

# PostgreSQL server binaries: the test of Dagster's Postgres storage (tests/ops/test_postgres.py)
# runs initdb and a throwaway server of its own. No system cluster is wanted, so Debian's
# postgresql-common is told (in a createcluster.d drop-in) not to create and start one.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[bootstrap] installing Debian's postgresql (for the Postgres-storage test)"
    mkdir -p /etc/postgresql-common/createcluster.d
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.d/refinery-no-main-cluster.conf
    (apt-get install -y -q postgresql >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q postgresql >/dev/null; })
  else
    echo "[bootstrap] no PostgreSQL: install your distribution's postgresql (initdb) for tests/ops/test_postgres.py" >&2
  fi
fi

# Tesseract's language data (English, the Latin script, Simplified Chinese, Arabic, Japanese,
# Korean, the Cyrillic and Greek scripts, Japanese and Chinese written in columns, Vietnamese,
# orientation/script detection):
# the OCR of text-rich images (crawlers/images/ocr.py) refuses to run without it. The tesserocr
# wheel carries the engine itself; the `tesseract` program is bench/ocr.py's plain peer. The two
# fonts draw the Chinese and Arabic test images (tests/images/test_ocr.py, bench/ocr.py);
# WenQuanYi Micro Hei also draws the sample web's text-rich images (sampleweb/textimages.py),
# which the sample web cannot be built without.
TESSDATA=/usr/share/tesseract-ocr/5/tessdata
if ! { [ -f "$TESSDATA/chi_sim.traineddata" ] && [ -f "$TESSDATA/ara.traineddata" ] \
    && [ -f "$TESSDATA/Latin.traineddata" ] && [ -f "$TESSDATA/jpn.traineddata" ] \
    && [ -f "$TESSDATA/kor.traineddata" ] && [ -f "$TESSDATA/Cyrillic.traineddata" ] \
    && [ -f "$TESSDATA/Greek.traineddata" ] && [ -f "$TESSDATA/jpn_vert.traineddata" ] \
    && [ -f "$TESSDATA/chi_sim_vert.traineddata" ] && [ -f "$TESSDATA/vie.traineddata" ] \
    && [ -f "$TESSDATA/chi_tra.traineddata" ] && [ -f "$TESSDATA/osd.traineddata" ] && command -v tesseract >/dev/null 2>&1 \
    && [ -f /usr/share/fonts/truetype/wqy/wqy-microhei.ttc ] \
    && [ -f /usr/share/fonts/opentype/fonts-hosny-amiri/Amiri-Regular.ttf ]; }; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "[bootstrap] installing Debian's tesseract-ocr with eng, Latin, chi_sim, ara, jpn, kor, Cyrillic, Greek, vertical jpn and chi_sim, vie, chi_tra and osd data (OCR)"
    pkgs="tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd tesseract-ocr-chi-sim tesseract-ocr-ara"
    pkgs="$pkgs tesseract-ocr-script-latn tesseract-ocr-jpn tesseract-ocr-kor"
    pkgs="$pkgs tesseract-ocr-script-cyrl tesseract-ocr-script-grek"
    pkgs="$pkgs tesseract-ocr-jpn-vert tesseract-ocr-chi-sim-vert tesseract-ocr-vie tesseract-ocr-chi-tra"
    pkgs="$pkgs fonts-wqy-microhei fonts-hosny-amiri"
    (apt-get install -y -q $pkgs >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q $pkgs >/dev/null; })
  else
    echo "[bootstrap] no Tesseract language data: install your distribution's tesseract-ocr, tesseract-ocr-script-latn, tesseract-ocr-chi-sim, tesseract-ocr-ara, tesseract-ocr-jpn, tesseract-ocr-kor, tesseract-ocr-script-cyrl, tesseract-ocr-script-grek, tesseract-ocr-jpn-vert, tesseract-ocr-chi-sim-vert, tesseract-ocr-vie, tesseract-ocr-chi-tra (and fonts-wqy-microhei, which the sample web needs, and fonts-hosny-amiri for the tests); until then 'refinery images ocr' refuses to run" >&2
  fi
fi
