"""Helpers for integration tests: start the Bumble virtual peer, run hcigatt against it."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, 'Tests', 'peer', 'bumble_peer.py')
HCIGATT = os.environ.get('HCIGATT', os.path.join(ROOT, '.build', 'debug', 'hcigatt'))
PYTHON = os.environ.get('BUMBLE_PYTHON', sys.executable)

sys.path.insert(0, os.path.join(ROOT, 'Tests', 'peer'))
from peer_events import EventReader  # noqa: E402


class Peer:
    """A bumble_peer.py process: one TCP controller for hcigatt plus peripherals.

    Bumble keeps controller state across client reconnects, so each test starts its own.
    Failing to start is an error, never a skip: the tests need their peer.
    """

    def __init__(self, *args, timeout=30):
        # stderr goes to a file: a pipe nobody reads could fill up and stall the peer.
        self.log = tempfile.TemporaryFile(mode='w+')
        self.proc = subprocess.Popen([PYTHON, PEER, '--port', '0', *args],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        deadline = time.monotonic() + timeout
        line = ''
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line or self.proc.poll() is not None:
                break
        if not line:
            self.close()
            self.log.seek(0)
            err = self.log.read()
            raise RuntimeError(f'bumble peer did not start: {err}')
        self.ready = json.loads(line)
        self.port = self.ready['port']
        self.transport = f'tcp:127.0.0.1:{self.port}'
        # Event lines the peer prints after the ready line (connected, written, ...).
        self.events = EventReader(self.proc.stdout)

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if getattr(self, 'events', None) is not None:
            self.events.thread.join(timeout=5)
        self.proc.stdout.close()

    def stderr(self):
        self.log.seek(0)
        return self.log.read()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def hcigatt(*args, timeout=60, stdin=None):
    """Runs hcigatt; returns (exit code, stdout, stderr). Each run keeps its bonds in a
    fresh directory unless the test gives --bond-dir (bonds with one Bumble process mean
    nothing to the next)."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as bonds:
        if '--bond-dir' not in args:
            env['HCIGATT_BOND_DIR'] = os.path.join(bonds, 'bonds')
        p = subprocess.run([HCIGATT, *args], capture_output=True, text=True, timeout=timeout, input=stdin, env=env)
    return p.returncode, p.stdout, p.stderr


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def measurement_lines(text):
    """subscribe/monitor --json output without its "kind":"link" lines."""
    return [v for v in json_lines(text) if v.get('kind') != 'link']


def link_lines(text):
    """The "kind":"link" lines of subscribe/monitor --json output."""
    return [v for v in json_lines(text) if v.get('kind') == 'link']
