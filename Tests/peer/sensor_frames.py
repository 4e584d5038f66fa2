"""Broadcast sensor frames for the virtual advertisers (BTHome v2 plain and encrypted, Ruuvi
RAWv2, pvvx), one per reading number, built here from the formats' documentation so the
tests check hcigatt's decoders against an independent encoder.

Reading n of each kind: temperature 20.00 + n/100 °C, humidity 40 + (n % 50) %, and a
counter or packet id that changes with n (so a scanner sees a new reading)."""
import struct

from cryptography.hazmat.primitives.ciphers.aead import AESCCM

# The bind key the tests give hcigatt for encrypted BTHome advertisers.
BTHOME_KEY = bytes.fromhex('231d39c1d7cc1ab1aee224cd096db932')


def reading(n):
    return 2000 + n, 4000 + (n % 50) * 100


def bthome_objects(n):
    t, h = reading(n)
    return bytes([0x00, n & 0xFF, 0x01, 90]) + b'\x02' + struct.pack('<h', t) + b'\x03' + struct.pack('<H', h)


def bthome(n):
    """Service data (UUID FCD2 included) of a plain BTHome v2 reading."""
    return b'\xd2\xfc\x40' + bthome_objects(n)


def bthome_encrypted(n, address):
    """Encrypted BTHome v2: nonce = address (display order) | D2 FC | 41 | counter (LE)."""
    counter = struct.pack('<I', n)
    nonce = bytes.fromhex(address.replace(':', '')) + b'\xd2\xfc\x41' + counter
    sealed = AESCCM(BTHOME_KEY, tag_length=4).encrypt(nonce, bthome_objects(n), None)
    return b'\xd2\xfc\x41' + sealed[:-4] + counter + sealed[-4:]


def ruuvi(n, address):
    """Manufacturer data (company 0499 included) of a Ruuvi RAWv2 reading."""
    t, h = reading(n)
    temperature = round(t / 100 / 0.005)
    humidity = round(h / 100 / 0.0025)
    power = (3000 - 1600) << 5 | (4 + 40) // 2
    mac = bytes.fromhex(address.replace(':', ''))
    return b'\x99\x04' + struct.pack('>BhHHhhhHBH', 5, temperature, humidity, 100000 - 50000, 4, -4, 1036, power,
                                     n % 255, n & 0xFFFF) + mac


def pvvx(n, address):
    """Service data (UUID 181A included) of a pvvx custom-format reading."""
    t, h = reading(n)
    mac = bytes(reversed(bytes.fromhex(address.replace(':', ''))))
    return b'\x1a\x18' + mac + struct.pack('<hHHBBB', t, h, 2998, 88, n & 0xFF, 0x04)


def ibeacon(n):
    """Manufacturer data (Apple's company id included) of an iBeacon whose minor is n:
    proximity UUID E2C56DB5-DFFB-48D2-B060-D0F5A71096E0, major 1, -59 dBm at 1 m."""
    return b'\x4c\x00\x02\x15' + bytes.fromhex('E2C56DB5DFFB48D2B060D0F5A71096E0') + struct.pack('>HHb', 1, n & 0xFFFF, -59)


def eddystone_tlm(n):
    """Service data (UUID FEAA included) of an Eddystone-TLM frame: 3000 mV, 20 + n/256 °C
    (8.8 fixed point), n advertising PDUs, n seconds since power-on."""
    return b'\xaa\xfe\x20\x00' + struct.pack('>HhII', 3000, 20 * 256 + (n & 0xFF), n, n * 10)


# Beacons have no room for a name beside their frame in 31 bytes.
BEACONS = ('ibeacon', 'eddystone')
KINDS = ('bthome', 'bthome-enc', 'ruuvi', 'pvvx') + BEACONS


def structure(kind, n, address):
    """(AD type, data) of reading n."""
    if kind == 'bthome':
        return 0x16, bthome(n)
    if kind == 'bthome-enc':
        return 0x16, bthome_encrypted(n, address)
    if kind == 'ruuvi':
        return 0xFF, ruuvi(n, address)
    if kind == 'pvvx':
        return 0x16, pvvx(n, address)
    if kind == 'ibeacon':
        return 0xFF, ibeacon(n)
    if kind == 'eddystone':
        return 0x16, eddystone_tlm(n)
    raise ValueError(kind)
