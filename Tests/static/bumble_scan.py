#!/usr/bin/env python3
"""The static hcigatt against the Bumble virtual world: scan finds the peripheral, and a
GATT read over our own host returns its value (proves the artifact really works: async
runtime, Dispatch, transports, codecs, all linked statically).

  BUMBLE_PYTHON=.venv/bin/python Tests/static/bumble_scan.py HCIGATT
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), 'integration'))
if len(sys.argv) != 2:
    sys.exit(__doc__)
os.environ['HCIGATT'] = os.path.abspath(sys.argv[1])
from peer import Peer, hcigatt, json_lines  # noqa: E402  (reads $HCIGATT at import)


def check(cond, what):
    if not cond:
        raise SystemExit(f'static: FAIL: {what}')


with Peer('--peripheral', 'Thermo-1,service=1809,mfr=004c:01020304,gatt=health') as peer:
    rc, out, err = hcigatt('scan', '--transport', peer.transport, '--duration', '2', '--json')
    check(rc == 0, f'scan exited {rc}: {err}')
    found = [r for r in json_lines(out) if r.get('name') == 'Thermo-1']
    check(found, f'scan did not find Thermo-1: {out!r}')
    d = found[0]
    check(d['address'] == 'F0:F1:F2:F3:F4:01' and d['services'] == ['1809'], f'wrong record {d}')
    check(d['manufacturer']['company_id'] == 0x004C and d['manufacturer']['data'] == '01020304', f'wrong manufacturer data {d}')
    check(err.strip().startswith('scan: 1 device in '), f'summary line {err!r}')
    print(f'static: scan found Thermo-1 at {d["address"]} (rssi {d["rssi"]}); {err.strip()}')

    rc, out, err = hcigatt('read', 'F0:F1:F2:F3:F4:01/public', '2a29', '--transport', peer.transport, '--json')
    check(rc == 0, f'read exited {rc}: {err}')
    value = json.loads(out)
    check(bytes.fromhex(value['hex']) == b'hcigatt-test', f'read 2A29 returned {out!r}')
    print('static: read 2A29 (Manufacturer Name) = "hcigatt-test" over a GATT connection')
