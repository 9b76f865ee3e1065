"""Time datatrove's URLFilter on the same URLs, lists and words as bench/filter_steps.py.

Executed inside a datatrove venv (with tldextract, pyahocorasick, fasteners) by
bench/filter_steps.py; prints one JSON line: CPU seconds to load the lists and to check the URLs.
Usage: python _datatrove_url.py URLS_JSON LISTS_DIR WORDS_JSON
"""

import json
import os
import sys
import time

import tldextract
from datatrove.data import Document
from datatrove.pipeline.filters.url_filter import URLFilter

urls_path, lists_dir, words_path = sys.argv[1:4]
urls = json.load(open(urls_path))
words = json.load(open(words_path))

c0 = time.process_time()
domains, listed_urls = [], []
for cat in sorted(os.listdir(lists_dir)):
    for kind, into in (("domains", domains), ("urls", listed_urls)):
        path = os.path.join(lists_dir, cat, kind)
        if os.path.exists(path):
            with open(path) as f:
                into.extend(line.strip() for line in f if line.strip())
f = URLFilter(
    extra_domains=domains,
    extra_urls=listed_urls,
    banned_words=words["hard"],
    soft_banned_words=words["soft"],
    banned_subwords=words["subword"],
    use_integrated_lists=False,  # the same lists as ours, not the UT1 lists it ships
)
f.tldextractor = tldextract.TLDExtract(suffix_list_urls=())  # bundled suffix list, no network
load = time.process_time() - c0
docs = [Document(text="", id=str(i), metadata={"url": u}) for i, u in enumerate(urls)]
f.filter(docs[0])
c0 = time.process_time()
blocked = sum(f.filter(d) is not True for d in docs)
print(json.dumps({"load": load, "check": time.process_time() - c0, "blocked": blocked}))
