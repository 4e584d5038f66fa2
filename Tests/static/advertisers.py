#!/usr/bin/env python3
"""A fake LE controller on TCP (H4) that makes a crowd of distinct advertisers.

Answers the commands hcigatt sends to initialise a controller and start a legacy scan,
then, once LE Set Scan Enable turns scanning on, streams LE Advertising Report events
(HCI LE Meta event 0x3E, subevent 0x02, one report each) from distinct static random
addresses: batches of --batch advertisers, pausing after each batch until a line arrives
on stdin (so the test can sample hcigatt's memory at known points).

Prints JSON lines on stdout: {"port": N} when listening, {"sent": TOTAL} after each batch,
{"done": TOTAL} after the last one. Any command it does not know is answered with
Command Complete "Unknown HCI Command" and logged on stderr, so hcigatt fails loudly
instead of the test passing against a controller that skips steps.

Pure standard library: needs no Bumble, runs anywhere python3 does.
"""
import argparse
import json
import socket
import struct
import sys

BD_ADDR = bytes.fromhex('0100eeffc0c0')  # C0:C0:FF:EE:00:01, little-endian on the wire


def command_complete(opcode: int, params: bytes) -> bytes:
    body = struct.pack('<BH', 1, opcode) + params
    return bytes([0x04, 0x0E, len(body)]) + body


def return_parameters(opcode: int, params: bytes):
    """Return parameters for a command this controller supports, or None."""
    ok = b'\x00'
    if opcode in (0x0C03, 0x0C01, 0x2001, 0x200B):  # Reset, Set Event Mask, LE Set Event Mask, LE Set Scan Parameters
        return ok
    if opcode == 0x200C:  # LE Set Scan Enable
        return ok
    if opcode == 0x1001:  # Read Local Version Information: HCI 5.3, manufacturer 0xFFFF
        return ok + struct.pack('<BHBHH', 0x0C, 0, 0x0C, 0xFFFF, 0)
    if opcode == 0x1009:  # Read BD_ADDR
        return ok + BD_ADDR
    if opcode == 0x1002:  # Read Local Supported Commands: none claimed beyond the basics
        return ok + bytes(64)
    if opcode == 0x1003:  # Read Local Supported Features: LE Supported (Controller), bit 38
        features = bytearray(8)
        features[4] |= 0x40
        return ok + bytes(features)
    if opcode == 0x2003:  # LE Read Local Supported Features: legacy only
        return ok + bytes(8)
    if opcode == 0x2002:  # LE Read Buffer Size [v1]: 251-byte ACL packets, 8 of them
        return ok + struct.pack('<HB', 251, 8)
    if opcode == 0x1005:  # Read Buffer Size
        return ok + struct.pack('<HBHH', 251, 0, 8, 0)
    return None


def advertising_report(index: int) -> bytes:
    """One LE Advertising Report event: ADV_NONCONN_IND from static random address #index."""
    # Static random address: the two most significant bits are 1. Little-endian on the wire.
    address = struct.pack('<I', index) + bytes([0x5A, 0xC7])
    name = f'adv-{index:06d}'.encode()
    data = bytes([0x02, 0x01, 0x06]) + bytes([len(name) + 1, 0x09]) + name \
        + bytes([0x05, 0xFF, 0xFF, 0xFF]) + struct.pack('<H', index & 0xFFFF)
    rssi = -40 - index % 50
    report = bytes([0x03, 0x01]) + address + bytes([len(data)]) + data + struct.pack('<b', rssi)
    body = bytes([0x02, 1]) + report  # subevent LE Advertising Report, Num_Reports 1
    return bytes([0x04, 0x3E, len(body)]) + body


def read_exact(conn: socket.socket, n: int) -> bytes:
    buf = b''
    while len(buf) < n:
        chunk = conn.recv(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def emit(obj) -> None:
    print(json.dumps(obj), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--port', type=int, default=0)
    parser.add_argument('--batch', type=int, default=10000, help='advertisers per batch')
    parser.add_argument('--batches', type=int, default=3)
    args = parser.parse_args()

    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(('127.0.0.1', args.port))
    server.listen(1)
    emit({'port': server.getsockname()[1]})
    conn, _ = server.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    sent = 0
    streamed = False
    try:
        while True:
            kind = read_exact(conn, 1)[0]
            if kind != 0x01:
                sys.exit(f'advertisers: unexpected H4 packet type 0x{kind:02x} from the host')
            opcode, length = struct.unpack('<HB', read_exact(conn, 3))
            params = read_exact(conn, length)
            ret = return_parameters(opcode, params)
            if ret is None:
                print(f'advertisers: unknown command 0x{opcode:04x} {params.hex()}', file=sys.stderr, flush=True)
                ret = b'\x01'  # Unknown HCI Command
            conn.sendall(command_complete(opcode, ret))
            if opcode == 0x200C and params[:1] == b'\x01' and not streamed:
                streamed = True
                for b in range(args.batches):
                    conn.sendall(b''.join(advertising_report(i) for i in range(sent, sent + args.batch)))
                    sent += args.batch
                    if b + 1 < args.batches:
                        emit({'sent': sent})
                        if not sys.stdin.readline():
                            return
                emit({'done': sent})
    except (EOFError, ConnectionError):
        pass  # hcigatt closed the connection: the run is over


if __name__ == '__main__':
    main()
