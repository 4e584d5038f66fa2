"""JSON event lines the Bumble peer prints on stdout after its ready line.

One JSON object per line, always with "event" and "t" (seconds since the peer started,
monotonic) and, for peripheral events, "peripheral" (its name). The vocabulary:

  connected            peer, peer_type ("public"/"random"), connection (handle), interval_ms,
                       latency, supervision_timeout_ms
  disconnected         peer, connection, reason (HCI code), reason_name
  mtu                  connection, mtu (after an Exchange MTU)
  subscribed           connection, handle (value handle), uuid, notify, indicate (booleans;
                       both false = unsubscribed)
  notified             connection, handle, uuid, value (hex), sequence
  indicated            connection, handle, uuid, value (hex), sequence
  indication-confirmed connection, handle, uuid, sequence
  indication-failed    connection, handle, uuid, sequence, error (timeout, disconnection)
  written              connection, handle, uuid, value (hex) — any accepted write: Write
                       Request, Write Command, Execute Write, CCCD writes included
  write-rejected       uuid, value (hex), error (ATT error code, 255 = Out of Range)
  disconnecting        connection, after (seconds) — --disconnect-after-connect fired; or
                       connection, at_att_request, name — --disconnect-at-att fired
  conn-params-requested connection, interval_min, interval_max, latency, timeout (Core units)
  conn-params-result   connection, result (0 accepted, 1 rejected) or error ("timeout",
                       "disconnected"), accepted (boolean)
  conn-params-updated  connection, interval_ms, latency, supervision_timeout_ms
  att                  connection, opcode, name (--log-att: every ATT PDU received)
  att-ignored          connection, opcode, name, count (--ignore-att-after: a request
                       left unanswered; count = requests seen so far)
  sensor-reading       name, n — a sensor peripheral broadcast its reading n
  silent               name — a peripheral stopped advertising (silent_after)
  events-dropped       count — the reader fell more than 4 MiB behind; that many lines
                       were thrown away

Writing never blocks the peer: stdout is made non-blocking once the ready line is out,
and lines wait in a bounded buffer while the pipe is full (a test that never reads the
events costs nothing until the buffer limit, then lines are dropped and counted).

`EventReader` helps tests: it reads the peer's stdout on a thread and waits for an
event that matches.
"""
import json
import os
import queue
import threading
import time

BUFFER_LIMIT = 4 * 1024 * 1024


class EventWriter:
    def __init__(self, stream):
        self.stream = stream
        self.fd = None
        self.loop = None
        self.pending = bytearray()
        self.dropped = 0
        self.started = time.monotonic()
        self.waiting = False

    def start(self, loop):
        """After the ready line: from now on writes go through the non-blocking fd."""
        self.stream.flush()
        self.fd = self.stream.fileno()
        os.set_blocking(self.fd, False)
        self.loop = loop

    def __call__(self, event: str, fields: dict) -> None:
        record = {'event': event, 't': round(time.monotonic() - self.started, 3)}
        record.update(fields)
        line = (json.dumps(record) + '\n').encode()
        if self.fd is None:
            # Before the ready line: nothing may precede it on stdout. Events that
            # early (none in practice) are dropped and counted.
            self.dropped += 1
            return
        if len(self.pending) + len(line) > BUFFER_LIMIT:
            self.dropped += 1
            return
        if self.dropped:
            note = json.dumps({'event': 'events-dropped', 'count': self.dropped}) + '\n'
            self.dropped = 0
            self.pending += note.encode()
        self.pending += line
        self.flush()

    def flush(self) -> None:
        while self.pending:
            try:
                n = os.write(self.fd, self.pending)
            except BlockingIOError:
                break
            except (BrokenPipeError, OSError):
                # Nobody reads any more: keep running, forget the events.
                self.pending.clear()
                break
            del self.pending[:n]
        if self.pending and not self.waiting:
            self.waiting = True
            self.loop.add_writer(self.fd, self.on_writable)
        elif not self.pending and self.waiting:
            self.waiting = False
            self.loop.remove_writer(self.fd)

    def on_writable(self) -> None:
        self.flush()


class EventReader:
    """Reads a peer's event lines on a thread (a text pipe's own buffering makes select
    unreliable). `wait_for(predicate, timeout)` returns the first unseen event that
    matches (or None after the timeout); `events` holds every event read so far."""

    def __init__(self, stream):
        self.stream = stream
        self.events = []
        self.queue = queue.Queue()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        for line in self.stream:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            self.queue.put(event)
        self.queue.put(None)

    def wait_for(self, predicate, timeout: float):
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            try:
                event = self.queue.get(timeout=remaining)
            except queue.Empty:
                return None
            if event is None:
                self.queue.put(None)  # stays at end of stream
                return None
            self.events.append(event)
            if predicate(event):
                return event

    def wait_event(self, name: str, timeout: float, **fields):
        """The next event called `name` whose fields include `fields`."""
        return self.wait_for(
            lambda e: e.get('event') == name and all(e.get(k) == v for k, v in fields.items()),
            timeout)
