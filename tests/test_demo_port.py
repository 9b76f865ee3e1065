"""A demo run serves the sample web on the port the lake's last run used (when free), so a killed
demo's crawl resumes with the URLs it queued still answering."""

from __future__ import annotations

import socket
from urllib.request import urlopen

from pipelines.demo import DEMO_PORT_FILE, _serve_on_the_lakes_port
from sampleweb import build_web


def test_a_second_run_serves_on_the_first_runs_port_and_a_taken_one_is_replaced(tmp_path):
    web = build_web()
    with _serve_on_the_lakes_port(web, tmp_path) as first:
        port = first.port
        url = first.seeds()[0]
    assert (tmp_path / DEMO_PORT_FILE).read_text().strip() == str(port)
    with _serve_on_the_lakes_port(web, tmp_path) as second:  # the killed run's port, reused
        assert second.port == port
        with urlopen(url, timeout=10) as answer:  # a URL the first run handed out answers
            assert answer.status == 200
    # the recorded port taken by another process on one of the sites' addresses: a new one
    host = url.split("//", 1)[1].split(":", 1)[0]
    with socket.socket() as other:
        other.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # past the TIME_WAIT
        other.bind((host, port))
        other.listen()
        with _serve_on_the_lakes_port(web, tmp_path) as third:
            assert third.port != port
    assert (tmp_path / DEMO_PORT_FILE).read_text().strip() == str(third.port)
    (tmp_path / DEMO_PORT_FILE).write_text("8\x00")  # a write a kill cut short: a new port
    with _serve_on_the_lakes_port(web, tmp_path) as fourth:
        assert fourth.port > 1024
