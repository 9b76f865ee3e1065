"""No UDP from the browser (issue 23): a rendered page's WebRTC (RTCPeerConnection with STUN and
TURN servers, ICE gathering) sent datagrams to a loopback listener, around the refusing proxy and
the request routing, which are TCP only (WebTransport, HTTP/3 over QUIC, is tried too). Chromium now runs with WebRTC limited to proxied UDP
(none) and pages lose the WebRTC constructors; the listener must receive nothing."""

from __future__ import annotations

import socket

import pytest

from common.browser import CHROMIUM_ARGS
from crawlers.render import RenderConfig, RenderJob, render_pages
from tests.crawl.loopback import SocketListener

pytestmark = pytest.mark.timeout(120)

FAST = {"delay": 0.0, "settle_max_ms": 3000, "idle_ms": 200, "page_timeout_s": 20}


class UdpListener(SocketListener):
    """Counts datagrams to a loopback address until the `with` block ends."""

    def __init__(self, ip: str):
        sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sock.bind((ip, 0))
        sock.settimeout(0.1)
        super().__init__(sock)
        self.ip, self.port = ip, sock.getsockname()[1]
        self.datagrams: list[bytes] = []

    def _listen(self) -> None:
        try:
            self.datagrams.append(self.sock.recv(4096))
        except TimeoutError:
            pass


def _page(ip: str, port: int) -> str:
    servers = (
        f"[{{urls: 'stun:{ip}:{port}'}}, "
        f"{{urls: 'turn:{ip}:{port}?transport=udp', username: 'u', credential: 'p'}}]"
    )
    # The page tries its own window's RTCPeerConnection and, should that be gone, a fresh
    # iframe's (a new realm), so the browser flag is exercised even where a script got one.
    return f"""<html><body><p id=own></p><p id=frame></p><script>
function gather(Ctor, where) {{
  const out = document.getElementById(where);
  if (typeof Ctor !== 'function') {{ out.textContent = where + ': no RTCPeerConnection'; return; }}
  try {{
    const pc = new Ctor({{iceServers: {servers}}});
    pc.createDataChannel('x');
    pc.onicecandidate = (e) => {{ if (e.candidate) out.textContent += ' ' + e.candidate.type; }};
    pc.createOffer().then((o) => pc.setLocalDescription(o));
    out.textContent = where + ': gathering';
  }} catch (e) {{ out.textContent = where + ': ' + e; }}
}}
gather(window.RTCPeerConnection || window.webkitRTCPeerConnection, 'own');
const f = document.createElement('iframe');
document.body.appendChild(f);
gather(f.contentWindow.RTCPeerConnection, 'frame');
try {{
  const wt = new WebTransport('https://{ip}:{port}/wt');  // HTTP/3: QUIC over UDP
  wt.ready.catch(() => 0); wt.closed.catch(() => 0);
}} catch (e) {{}}
setTimeout(() => 0, 1500);
</script></body></html>"""


def test_webrtc_sends_no_udp_from_a_rendered_page(no_browser_leak):
    assert any(a.startswith("--webrtc-ip-handling-policy=") for a in CHROMIUM_ARGS)
    with UdpListener("127.0.0.94") as udp:
        (out,) = render_pages(
            [RenderJob("http://127.0.0.93:9/webrtc", _page(udp.ip, udp.port))],
            RenderConfig(pages_in_flight=1, **FAST),
        )
    assert out.error is None, out.error
    assert udp.datagrams == [], f"{len(udp.datagrams)} UDP datagrams reached the listener"
    assert "own: no RTCPeerConnection" in out.html
