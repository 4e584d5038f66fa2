#!/usr/bin/env python3
"""Memory while scanning a crowd: hcigatt scan against 32 000 distinct advertisers.

  Tests/static/rss.py HCIGATT

advertisers.py (a fake H4 controller on TCP) streams LE Advertising Reports from
distinct addresses in four batches of 8 000; after each batch this script waits until
hcigatt has printed a NEW line for every advertiser so far, then reads VmRSS from
/proc/PID/status. A sampler thread reads VmRSS every 20 ms throughout. Asserts:
  * every advertiser was printed exactly once (hcigatt really saw 32 000 devices);
  * peak RSS (VmHWM) <= 16 MiB;
  * RSS after 32 000 advertisers is within 1 MiB of RSS after 8 000 (the device table
    holds at most 4096 devices, so memory must stop growing well before 8 000). Measured
    growth varies from run to run, 300-630 KiB (malloc keeping freed event buffers); a
    leak of even 100 bytes per device would be 2.4 MB.
A batch is smaller than the scan event stream's buffer (8192 events): until the stream
has back-pressure (issue 13), a batch larger than that is lost in part whenever the
printing falls behind the burst, and the test would wait for lines that never come.
A line that does not come within 20 s fails the test (it never hangs).
Exit status 0 when all hold; prints the measurements either way.
"""
import json
import os
import pty
import re
import select
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BATCH = 8000
BATCHES = 4
LINE_TIMEOUT = 20
PEAK_LIMIT_KIB = 16 * 1024
GROWTH_LIMIT_KIB = 1024
LINE = re.compile(r'^NEW ([0-9A-F]{2}(?::[0-9A-F]{2}){5}) ')


def status_kib(pid: int, field: str) -> int:
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith(field + ':'):
                return int(line.split()[1])
    raise RuntimeError(f'no {field} in /proc/{pid}/status')


class PtyLines:
    def __init__(self, fd: int):
        self.fd = fd
        self.buf = b''

    def readline(self) -> str:
        while b'\n' not in self.buf:
            if not select.select([self.fd], [], [], LINE_TIMEOUT)[0]:
                raise RuntimeError(f'no output from hcigatt for {LINE_TIMEOUT} s')
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:  # EIO: the other side is closed
                chunk = b''
            if not chunk:
                line, self.buf = self.buf, b''
                return line.decode()
            self.buf += chunk
        line, self.buf = self.buf.split(b'\n', 1)
        return line.rstrip(b'\r').decode() + '\n'


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    binary = sys.argv[1]
    ctrl = subprocess.Popen([sys.executable, os.path.join(HERE, 'advertisers.py'),
                             '--batch', str(BATCH), '--batches', str(BATCHES)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    scan = None
    try:
        ready = ctrl.stdout.readline()
        if not ready:
            raise RuntimeError('advertisers.py did not start')
        port = json.loads(ready)['port']
        # stdout on a pseudo-terminal: line-buffered, as in a shell (into a pipe the last
        # lines of a batch would wait in the stdio buffer).
        master, slave = pty.openpty()
        scan = subprocess.Popen([binary, 'scan', '--transport', f'tcp:127.0.0.1:{port}', '--passive'],
                                stdout=slave, stderr=subprocess.PIPE, text=True)
        os.close(slave)
        lines = PtyLines(master)
        samples = []
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                try:
                    samples.append(status_kib(scan.pid, 'VmRSS'))
                except (OSError, RuntimeError):
                    return
                time.sleep(0.02)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()

        seen = set()
        checkpoints = []  # (advertisers printed, VmRSS KiB)
        parts = []  # RssAnon / RssFile / RssShmem at each checkpoint
        started = time.monotonic()
        deadline = started + 120
        for batch in range(1, BATCHES + 1):
            want = batch * BATCH
            while len(seen) < want:
                if time.monotonic() > deadline:
                    raise RuntimeError(f'hcigatt printed {len(seen)} of {want} advertisers within 120 s')
                line = lines.readline()
                if not line:
                    raise RuntimeError(f'hcigatt stopped after {len(seen)} advertisers: {scan.stderr.read()}')
                m = LINE.match(line)
                if not m:
                    raise RuntimeError(f'unexpected scan line: {line!r}')
                if m.group(1) in seen:
                    raise RuntimeError(f'{m.group(1)} printed twice')
                seen.add(m.group(1))
            time.sleep(0.3)  # let the last lines' buffers settle before reading RSS
            checkpoints.append((want, status_kib(scan.pid, 'VmRSS')))
            parts.append({k: status_kib(scan.pid, k) for k in ('RssAnon', 'RssFile', 'RssShmem')})
            if batch < BATCHES:
                msg = ctrl.stdout.readline()
                if json.loads(msg).get('sent') != want:
                    raise RuntimeError(f'advertisers.py said {msg!r}')
                ctrl.stdin.write('go\n')
                ctrl.stdin.flush()
        elapsed = time.monotonic() - started
        hwm = status_kib(scan.pid, 'VmHWM')
        stop.set()
        sampler.join()
        scan.send_signal(signal.SIGINT)
        _, err = scan.communicate(timeout=30)
        if scan.returncode != 0:
            raise RuntimeError(f'hcigatt scan exited {scan.returncode}: {err}')
        summary = err.strip().splitlines()[-1] if err.strip() else ''
        expected = f'scan: {BATCH * BATCHES} devices in '
        if not summary.startswith(expected) or f'({BATCH * BATCHES} advertising reports)' not in summary:
            raise RuntimeError(f'summary line {summary!r}, expected {expected!r}... ({BATCH * BATCHES} advertising reports)')

        print(f'rss: {len(seen)} distinct advertisers in {elapsed:.1f} s; summary: {summary}')
        for (n, kib), part in zip(checkpoints, parts):
            detail = ', '.join(f'{k} {v}' for k, v in part.items())
            print(f'rss:   VmRSS after {n:>6} advertisers: {kib} KiB ({detail})')
        print(f'rss:   VmRSS sampled every 20 ms: max {max(samples)} KiB over {len(samples)} samples; VmHWM {hwm} KiB')
        growth = checkpoints[-1][1] - checkpoints[0][1]
        failures = []
        if hwm > PEAK_LIMIT_KIB:
            failures.append(f'peak RSS {hwm} KiB > {PEAK_LIMIT_KIB} KiB')
        if growth > GROWTH_LIMIT_KIB:
            failures.append(f'RSS grew {growth} KiB from {checkpoints[0][0]} to {checkpoints[-1][0]} advertisers (limit {GROWTH_LIMIT_KIB} KiB)')
        for f in failures:
            print(f'rss: FAIL: {f}')
        if not failures:
            print(f'rss: ok (peak {hwm} KiB <= {PEAK_LIMIT_KIB} KiB, growth {growth} KiB <= {GROWTH_LIMIT_KIB} KiB)')
        return 1 if failures else 0
    finally:
        for p in (scan, ctrl):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


if __name__ == '__main__':
    sys.exit(main())
