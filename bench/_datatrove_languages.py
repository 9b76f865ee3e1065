"""datatrove's side of bench/filter_languages.py, run inside bench/.venvs/datatrove: each
document of CORPUS_DIR/documents.parquet through datatrove's LanguageFilter (every language,
threshold 0.5, the same lid.176 file) and FineWeb's quality filters in their order
(_datatrove_recipe.quality_steps); prints one JSON line, {id: [language, the first filter that
dropped it or null]}.

Usage: python _datatrove_languages.py CORPUS_DIR LID_MODEL_PATH
"""

import json
import sys

import pyarrow.parquet as pq
from _datatrove_recipe import local_lid, quality_steps
from datatrove.data import Document
from datatrove.pipeline.filters import LanguageFilter

corpus, lid_path = sys.argv[1:3]
lang_filter = LanguageFilter(languages=None, language_threshold=0.5)
lang_filter.model = local_lid(lid_path)
steps = [lang_filter, *quality_steps()]
out = {}
for row in pq.read_table(f"{corpus}/documents.parquet", columns=["id", "text"]).to_pylist():
    doc = Document(text=row["text"], id=row["id"])
    reason = None
    for step in steps:
        verdict = step.filter(doc)
        kept = verdict[0] if isinstance(verdict, tuple) else verdict
        if not kept:
            why = verdict[1] if isinstance(verdict, tuple) and len(verdict) > 1 else None
            reason = f"{type(step).__name__}:{why}" if why else type(step).__name__
            break
    out[row["id"]] = [doc.metadata.get("language"), reason]
print(json.dumps(out))
