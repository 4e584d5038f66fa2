"""Random inputs through bumble.crypto, written as spec-order test vectors (most
significant octet first) for the Swift cross-check (BumbleCrossCheckTests): one line per
case, `function input... output`, hex."""
import os
import sys

from bumble import crypto


def be(b: bytes) -> str:
    """bumble's little-endian bytes as the specification writes them."""
    return bytes(reversed(b)).hex()


def main(path, count):
    r = os.urandom
    lines = []
    for _ in range(count):
        k, rr, r1, r2 = r(16), r(16), r(16), r(16)
        preq, pres = bytes([1]) + r(6), bytes([2]) + r(6)
        iat, rat = r(1)[0] & 1, r(1)[0] & 1
        ia, ra = r(6), r(6)
        lines.append(f'c1 {be(k)} {be(rr)} {preq.hex()} {pres.hex()} {iat} {be(ia)} {rat} {be(ra)} '
                     f'{be(crypto.c1(k, rr, preq, pres, iat, rat, ia, ra))}')
        lines.append(f's1 {be(k)} {be(r1)} {be(r2)} {be(crypto.s1(k, r1, r2))}')
        u, v, x, y, w32 = r(32), r(32), r(16), r(16), r(32)
        z = r(1)
        lines.append(f'f4 {be(u)} {be(v)} {be(x)} {z.hex()} {be(crypto.f4(u, v, x, z))}')
        a1, a2 = r(6) + bytes([r(1)[0] & 1]), r(6) + bytes([r(1)[0] & 1])
        mac, ltk = crypto.f5(w32, x, y, a1, a2)
        lines.append(f'f5 {be(w32)} {be(x)} {be(y)} {be(a1)} {be(a2)} {be(mac)} {be(ltk)}')
        w16, rv, io = r(16), r(16), r(3)
        lines.append(f'f6 {be(w16)} {be(x)} {be(y)} {be(rv)} {be(io)} {be(a1)} {be(a2)} '
                     f'{be(crypto.f6(w16, x, y, rv, io, a1, a2))}')
        lines.append(f'g2 {be(u)} {be(v)} {be(x)} {be(y)} {crypto.g2(u, v, x, y):08x}')
        prand = r(3)
        lines.append(f'ah {be(k)} {be(prand)} {be(crypto.ah(k, prand))}')
        # P-256: our key from the same scalar must match bumble's, and so must the DHKey.
        n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
        d = (int.from_bytes(r(32), 'big') % (n - 1) + 1).to_bytes(32, 'big')
        a, b = crypto.EccKey.from_private_key_bytes(d), crypto.EccKey.generate()
        lines.append(f'ecdh {d.hex()} {a.x.hex()} {a.y.hex()} {b.x.hex()} {b.y.hex()} {a.dh(b.x, b.y).hex()}')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')


if __name__ == '__main__':
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 32)
