"""HTML of the test pages: a static article with a merged-cell table and images, and JS pages."""

PARA = "Otters are semi-aquatic mammals that live along rivers and coasts across many continents. "


def article(title: str = "River otters", extra: str = "") -> str:
    """A static article: heading, paragraphs, an image, a list, a table with a rowspan, another image."""
    return f"""<!DOCTYPE html><html lang="en-US"><head><meta charset="utf-8"><title>{title} | Wildlife</title>
<link rel="canonical" href="/articles/otters"><meta name="author" content="Ada Lovelace">
<meta property="og:site_name" content="Wildlife Weekly"></head><body>
<nav><a href="/">Home</a> <a href="/about">About</a></nav>
<article><h1>{title}</h1><p>{PARA * 3}</p>
<figure><img src="/img/otter.jpg" alt="An otter floating on its back"><figcaption>Otter at rest.</figcaption></figure>
<h2>Diet</h2><ul><li>Fish and crayfish</li><li>Frogs and birds</li></ul><p>{PARA * 2}</p>
<table><thead><tr><th>Species</th><th>Region</th><th>Weight</th></tr></thead>
<tbody><tr><td rowspan="2">Lutra</td><td>Europe</td><td>7 kg</td></tr><tr><td>Asia</td><td>8 kg</td></tr>
<tr><td colspan="2">Enhydra (sea otter)</td><td>30 kg</td></tr></tbody></table>
<p>Kelp forests <img src="pics/kelp.png" alt="Kelp forest"> shelter sea otters from storms and predators all year.</p>
{extra}<p>{PARA * 2}</p></article><footer>Copyright Wildlife Weekly</footer></body></html>"""


def js_page(api_base: str) -> str:
    """A shell page whose content comes from fetch, a delayed insertion, a shadow root and a load-more button."""
    return f"""<!DOCTYPE html><html lang="en"><head><title>Live feed</title></head><body>
<div id="root"></div><noscript>Please enable JavaScript to read this page.</noscript>
<script>
fetch('{api_base}/api/items').then(r => r.json()).then(d => {{
  for (const t of d.items) {{ const p = document.createElement('p'); p.textContent = t; document.getElementById('root').appendChild(p); }}
}});
fetch('{api_base}/private/data').then(r => r.json()).then(d => {{
  const p = document.createElement('p'); p.textContent = d.secret; document.body.appendChild(p); }}).catch(() => {{}});
setTimeout(() => {{ const p = document.createElement('p');
  p.textContent = 'Delayed passage about otter pups learning to swim in shallow water.'; document.getElementById('root').appendChild(p); }}, 600);
class OtterCard extends HTMLElement {{ constructor() {{ super();
  this.attachShadow({{mode: 'open'}}).innerHTML = '<p>Shadow passage about otters holding hands while sleeping.</p>'; }} }}
customElements.define('otter-card', OtterCard);
let n = 0;
function more() {{ const p = document.createElement('p'); p.textContent = 'Loaded passage number ' + (++n) + ' about otter dens.';
  document.getElementById('more-box').appendChild(p); if (n >= 2) document.getElementById('more').remove(); }}
</script><otter-card></otter-card><div id="more-box"></div>
<button id="more" onclick="setTimeout(more, 100)">Mehr laden</button></body></html>"""


JS_PASSAGES = [
    "Fetched passage about river otters.",
    "Fetched passage about kelp.",
    "Delayed passage about otter pups learning to swim in shallow water.",
    "Shadow passage about otters holding hands while sleeping.",
    "Loaded passage number 1 about otter dens.",
    "Loaded passage number 2 about otter dens.",
]
