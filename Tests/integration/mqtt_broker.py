"""Real Mosquitto brokers and subscribers for the gateway tests: each broker is started on
a free loopback port with a config file the test writes (persistence, TLS, passwords,
bridges), and can be stopped and started again on the same port. Failing to start is an
error, never a skip."""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

MOSQUITTO = shutil.which('mosquitto') or '/usr/sbin/mosquitto'


def free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Broker:
    """A mosquitto process. `persistent`: sessions, queued and retained messages survive a
    restart. `extra`: more config lines (TLS listener, bridges)."""

    def __init__(self, persistent=True, extra='', anonymous=True, password_file=None, port=None):
        self.dir = tempfile.mkdtemp(prefix='hcigatt-mqtt-')
        self.port = port or free_port()
        os.chmod(self.dir, 0o755)
        lines = [f'listener {self.port} 127.0.0.1', f'allow_anonymous {"true" if anonymous else "false"}']
        if os.getuid() == 0:
            # Started as root, mosquitto would become the user mosquitto, who cannot read
            # the test's files.
            lines.append('user root')
        if password_file:
            lines.append(f'password_file {password_file}')
        if persistent:
            lines += ['persistence true', f'persistence_location {self.dir}/', 'autosave_interval 1']
        else:
            lines.append('persistence false')
        lines.append(f'log_dest file {self.dir}/mosquitto.log')
        lines.append('log_type all')
        self.config = os.path.join(self.dir, 'mosquitto.conf')
        with open(self.config, 'w') as f:
            f.write('\n'.join(lines) + '\n' + extra + '\n')
        self.proc = None
        self.start()

    @property
    def uri(self):
        return f'mqtt://127.0.0.1:{self.port}'

    def start(self):
        self.proc = subprocess.Popen([MOSQUITTO, '-c', self.config], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f'mosquitto did not start: {self.proc.stderr.read()} {self.log()}')
            try:
                with socket.create_connection(('127.0.0.1', self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError(f'mosquitto did not listen on {self.port}: {self.log()}')

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def log(self):
        try:
            with open(os.path.join(self.dir, 'mosquitto.log')) as f:
                return f.read()[-4000:]
        except OSError:
            return ''

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Subscriber:
    """mosquitto_sub on `topics` with a persistent session (QoS 1), collecting (topic,
    payload) pairs on a thread; it reconnects by itself when the broker comes back."""

    def __init__(self, broker, *topics, client_id=None, extra=()):
        args = ['mosquitto_sub', '-p', str(broker.port), '-h', '127.0.0.1', '-v', '-q', '1', '-F', '%t %p']
        if client_id:
            args += ['-c', '-i', client_id]
        # A probe topic of its own: the subscription is known to be in place once a probe
        # published there comes back.
        self.probe = f'hcigatt-test-probe/{os.getpid()}/{id(self)}'
        for t in list(topics or ('#',)) + [self.probe]:
            args += ['-t', t]
        self.proc = subprocess.Popen(args + list(extra), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.messages = []
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not any(t == self.probe for t, _ in self.snapshot()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f'mosquitto_sub did not subscribe: {self.proc.stderr.read() if self.proc.poll() is not None else ""}')
            subprocess.run(['mosquitto_pub', '-p', str(broker.port), '-h', '127.0.0.1', '-t', self.probe, '-m', 'probe',
                            *list(extra)], capture_output=True, timeout=10)
            time.sleep(0.1)

    def _read(self):
        for line in self.proc.stdout:
            topic, _, payload = line.rstrip('\n').partition(' ')
            with self.lock:
                self.messages.append((topic, payload))

    def snapshot(self):
        with self.lock:
            return list(self.messages)

    def readings(self, topic_part=''):
        """The JSON readings (messages with a seq) whose topic contains topic_part."""
        out = []
        for topic, payload in self.snapshot():
            if topic_part in topic and payload.startswith('{'):
                try:
                    j = json.loads(payload)
                except ValueError:
                    continue
                if 'seq' in j:
                    out.append((topic, j))
        return out

    def wait_for(self, predicate, timeout=30, what='messages'):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(self):
                return
            time.sleep(0.1)
        raise AssertionError(f'timed out waiting for {what}; got {len(self.snapshot())} messages, '
                             f'last: {self.snapshot()[-3:]}')

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.thread.join(timeout=5)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
