"""The GATT database the test peripherals serve (bumble_peer.py ...,gatt=health).

Everything is deterministic so tests can assert exact bytes:

  Health Thermometer 0x1809
    2A1C Temperature Measurement   indicate   FLOAT 36.4 °C + time stamp + type (body)
    2A1E Intermediate Temperature  notify     FLOAT 36.2 °C
    2A1D Temperature Type          read       0x02 (body)
    2A21 Measurement Interval      read/write/indicate, uint16 seconds, initially 1;
         Valid Range descriptor 0x2906 = 1..60; a write outside it fails with ATT
         error 0xFF (Out of Range); an accepted write is indicated to subscribers.
  Device Information 0x180A
    2A29 "hcigatt-test", 2A24 "bumble-peer", 2A25 "SN-0001", 2A26 "1.0.0",
    2A50 PnP ID 01 F105 0100 0001 (SIG source, vendor 0x05F1, product 1, version 1.0)
  Blood Pressure 0x1810
    2A35 Blood Pressure Measurement indicate  120/80 mmHg MAP 93, pulse 72 (SFLOATs)
    2A49 Blood Pressure Feature     read      0x0003
  Heart Rate 0x180D
    2A37 Heart Rate Measurement     notify    72 bpm, contact detected, RR 853/1024 s
    2A38 Body Sensor Location       read      0x01 (chest)
  Battery 0x180F
    2A19 Battery Level              read/notify 90 %
  Vendor FFE0 (TI SensorTag "simple keys")
    FFE1 keys                       notify    bitmask counting 0,1,2,3,0,...
  Test service 68636967-6174-7400-8000-00805F9B0000 (128-bit, ours)
    ...0001 long value              read      600 bytes, byte i = i mod 256
    ...0002 echo                    read/write/write-without-response; reads return
                                    the last value written (initially "echo"); up to
                                    512 bytes (long writes through Prepare/Execute)
    ...0003 secret                  read, needs encryption (Insufficient Encryption
                                    0x0F without it)

The 600-byte value is longer than the 512 bytes the Core Specification allows for an
attribute value (Vol 3 Part F §3.2.9); Bumble serves it anyway through Read Blob, which
is what the long-read test wants (a client must read to the end, not stop at 512).
"""
import asyncio
import struct

from bumble import att
from bumble.gatt import Characteristic, CharacteristicValue, Descriptor, Service

P = Characteristic.Properties
READ = att.Attribute.READABLE
WRITE = att.Attribute.WRITEABLE


def test_uuid(n: int) -> str:
    """Our 128-bit UUIDs: 68636967-6174-7400-8000-00805F9BXXXX ("hcigat t" + n)."""
    return f'68636967-6174-7400-8000-00805F9B{n:04X}'


TEST_SERVICE_UUID = test_uuid(0)
LONG_VALUE_UUID = test_uuid(1)
ECHO_UUID = test_uuid(2)
SECRET_UUID = test_uuid(3)

LONG_VALUE = bytes(i % 256 for i in range(600))
SECRET_VALUE = b'secret'

MEASUREMENT_INTERVAL_RANGE = (1, 60)


def ieee11073_float(mantissa: int, exponent: int) -> bytes:
    """IEEE 11073-20601 32-bit FLOAT: 8-bit exponent, 24-bit mantissa (little endian)."""
    return struct.pack('<I', ((exponent & 0xFF) << 24) | (mantissa & 0xFFFFFF))


def ieee11073_sfloat(mantissa: int, exponent: int = 0) -> bytes:
    """IEEE 11073-20601 16-bit SFLOAT: 4-bit exponent, 12-bit mantissa (little endian)."""
    return struct.pack('<H', ((exponent & 0x0F) << 12) | (mantissa & 0x0FFF))


def temperature_measurement(sequence: int) -> bytes:
    """Flags 0x06 (°C, time stamp, type) + 36.4 + 2024-01-02 03:04:SS + body (0x02).
    The seconds count the indications sent (mod 60) so a client can check order."""
    return (bytes([0x06]) + ieee11073_float(364, -1)
            + struct.pack('<HBBBBB', 2024, 1, 2, 3, 4, sequence % 60) + bytes([0x02]))


def intermediate_temperature(sequence: int) -> bytes:
    """Flags 0x00 (°C only) + 36.2."""
    del sequence
    return bytes([0x00]) + ieee11073_float(362, -1)


def blood_pressure_measurement(sequence: int) -> bytes:
    """Flags 0x04 (mmHg, pulse rate) + 120 / 80 / 93 + pulse 72."""
    del sequence
    return (bytes([0x04]) + ieee11073_sfloat(120) + ieee11073_sfloat(80)
            + ieee11073_sfloat(93) + ieee11073_sfloat(72))


def heart_rate_measurement(sequence: int) -> bytes:
    """Flags 0x16 (uint8 rate, contact supported + detected, RR present) + 72 + RR 853."""
    del sequence
    return bytes([0x16, 72]) + struct.pack('<H', 853)


def battery_level(sequence: int) -> bytes:
    del sequence
    return bytes([90])


def sensortag_keys(sequence: int) -> bytes:
    return bytes([sequence % 4])


class HealthDatabase:
    """The services above, plus the periodic values to send to subscribers.

    `events` is called with (name, fields) for peer events ("written",
    "write-rejected"); the peer turns them into JSON lines.
    """

    def __init__(self, events):
        self.events = events
        self.interval = 1
        self.echo = bytearray(b'echo')

        def read_interval(connection):
            return struct.pack('<H', self.interval)

        def write_interval(connection, value):
            low, high = MEASUREMENT_INTERVAL_RANGE
            seconds = int.from_bytes(value, 'little') if len(value) == 2 else -1
            if not low <= seconds <= high:
                self.events('write-rejected', {'uuid': '2A21', 'value': bytes(value).hex(),
                                               'error': att.ErrorCode.OUT_OF_RANGE})
                raise att.ATT_Error(att.ErrorCode.OUT_OF_RANGE)
            self.interval = seconds
            if self.interval_listener is not None:
                self.interval_listener(connection)

        def read_echo(connection):
            return bytes(self.echo)

        def write_echo(connection, value):
            self.echo = bytearray(value)

        # Called with the connection after an accepted Measurement Interval write (the
        # peer indicates the new value to subscribers).
        self.interval_listener = None
        self.temperature = Characteristic('2A1C', P.INDICATE, 0, b'')
        self.intermediate = Characteristic('2A1E', P.NOTIFY, 0, b'')
        self.measurement_interval = Characteristic(
            '2A21', P.READ | P.WRITE | P.INDICATE, READ | WRITE,
            CharacteristicValue(read=read_interval, write=write_interval),
            descriptors=[Descriptor('2906', READ, struct.pack('<HH', *MEASUREMENT_INTERVAL_RANGE))])
        self.blood_pressure = Characteristic('2A35', P.INDICATE, 0, b'')
        self.heart_rate = Characteristic('2A37', P.NOTIFY, 0, b'')
        self.battery = Characteristic('2A19', P.READ | P.NOTIFY, READ, battery_level(0))
        self.keys = Characteristic('FFE1', P.NOTIFY, 0, b'')

        self.services = [
            Service('1809', [
                self.temperature,
                self.intermediate,
                Characteristic('2A1D', P.READ, READ, bytes([0x02])),
                self.measurement_interval,
            ]),
            Service('180A', [
                Characteristic('2A29', P.READ, READ, b'hcigatt-test'),
                Characteristic('2A24', P.READ, READ, b'bumble-peer'),
                Characteristic('2A25', P.READ, READ, b'SN-0001'),
                Characteristic('2A26', P.READ, READ, b'1.0.0'),
                Characteristic('2A50', P.READ, READ, bytes([0x01]) + struct.pack('<HHH', 0x05F1, 0x0001, 0x0100)),
            ]),
            Service('1810', [
                self.blood_pressure,
                Characteristic('2A49', P.READ, READ, struct.pack('<H', 0x0003)),
            ]),
            Service('180D', [
                self.heart_rate,
                Characteristic('2A38', P.READ, READ, bytes([0x01])),
            ]),
            Service('180F', [self.battery]),
            Service('FFE0', [self.keys]),
            Service(TEST_SERVICE_UUID, [
                Characteristic(LONG_VALUE_UUID, P.READ, READ, LONG_VALUE),
                Characteristic(ECHO_UUID, P.READ | P.WRITE | P.WRITE_WITHOUT_RESPONSE, READ | WRITE,
                               CharacteristicValue(read=read_echo, write=write_echo)),
                Characteristic(SECRET_UUID, P.READ, att.Attribute.READ_REQUIRES_ENCRYPTION, SECRET_VALUE),
            ]),
        ]

    def periodic(self):
        """(characteristic, indicate?, value function) sent to subscribers each period."""
        return [
            (self.temperature, True, temperature_measurement),
            (self.intermediate, False, intermediate_temperature),
            (self.blood_pressure, True, blood_pressure_measurement),
            (self.heart_rate, False, heart_rate_measurement),
            (self.battery, False, battery_level),
            (self.keys, False, sensortag_keys),
        ]


class UartDatabase:
    """gatt=uart: the Nordic UART Service as phone and MCU "BLE UART" firmwares serve it.
    What a central writes to RX is echoed back on TX, piece by piece, upper-cased (so an
    echo is told from a reflection); the chat tests join the pieces."""

    SERVICE = '6E400001-B5A3-F393-E0A9-E50E24DCCA9E'

    def __init__(self, events):
        self.events = events
        self.interval_listener = None
        # Called with (connection, characteristic, data): the peer notifies it.
        self.echo_listener = None

        def write_rx(connection, value):
            if self.echo_listener is not None:
                self.echo_listener(connection, self.tx, bytes(value).upper())

        self.tx = Characteristic('6E400003-B5A3-F393-E0A9-E50E24DCCA9E', P.NOTIFY, 0, b'')
        self.services = [Service(self.SERVICE, [
            Characteristic('6E400002-B5A3-F393-E0A9-E50E24DCCA9E', P.WRITE | P.WRITE_WITHOUT_RESPONSE, WRITE,
                           CharacteristicValue(write=write_rx)),
            self.tx,
        ])]

    def periodic(self):
        return []


def glucose_measurement(n: int, context: bool, day: int = 1) -> bytes:
    """Glucose Measurement #n: concentration and type present, kg/L, 2026-12-DD 0n:00:00,
    (90 + n) mg/dL = (90 + n)e-5 kg/L, capillary whole blood (1) at the finger (1)."""
    flags = 0x02 | (0x10 if context else 0)
    base_time = struct.pack('<HBBBBB', 2026, 12, day, n % 24, 0, 0)
    return bytes([flags]) + struct.pack('<H', n) + base_time + ieee11073_sfloat(90 + n, -5) + bytes([0x11])


def glucose_context(n: int) -> bytes:
    """Glucose Measurement Context #n: meal present, preprandial (1)."""
    return bytes([0x02]) + struct.pack('<H', n) + bytes([0x01])


class GlucoseDatabase:
    """gatt=glucose[-MODE]: a glucose meter (0x1808) with five stored readings, sequence
    numbers 1 to 5 (#2 with a context, taken 2026-12-01 at n o'clock), behind its Record
    Access Control Point; records go 0.25 s apart so a test can abort in the middle. Report
    Stored Records and Report Number take all, first, last, <=, >= and within a range of
    sequence numbers (none matching: No Records Found); Abort stops a report and is
    answered Success; a request while one runs is refused with ATT 0x80 (Procedure Already
    In Progress). The same meter later: more (readings 1 to 8), renumbered (it was reset:
    readings 1 to 3, taken on 2026-12-02); unfiltered (the renumbered meter with two more,
    1 to 5 on 2026-12-02, reporting every record whatever the operator, as some meters do);
    reset (reset again, and since with more readings than before: 1 to 9, on 2026-12-03);
    nearwrap (readings 65533 and 65534) and wrapped (65533 to 65535, then 0 and 1: the
    numbers wrapped).
    Misbehaving modes (no encryption needed in any):
      busy      every request refused with ATT 0x80, as a meter busy with another collector
      silent    requests taken (Write Response) and never answered
      disorder  all records as 3, 1, 2, 2, 5, 4: out of order and one sent twice, then Success
      late      the five records, Success, then one more record after the answer
      lagging   an Abort stops the report only after two more records (queued before it)
      flood     a report answered with malformed Glucose Measurements (two bytes), about a
                thousand a second, forever, and never a control point answer
      endless   a report answered with good records, each a new sequence number (wrapping),
                every 20 ms, forever, and never an answer
      wronganswer  a report answered only with other procedures' answers (a Number of Stored
                Records Response, a Delete's Success), every 0.3 s, forever
      Each is told to stop by an Abort (answered Success), as a meter that floods on purpose
      would not be: the flood modes ignore it."""

    SERVICE = '1808'

    def __init__(self, events, mode='normal'):
        self.events = events
        self.mode = mode
        self.interval_listener = None
        # Set by GattBehaviour: coroutine (connection, characteristic, indicate, data, sequence).
        self.sender = None
        # Set by GattBehaviour: coroutine (connection, characteristic, data), a notification
        # sent with no event.
        self.flooder = None
        self.task = None
        self.abort_requested = False
        self.numbers = {'nearwrap': [65533, 65534], 'wrapped': [65533, 65534, 65535, 0, 1]}.get(
            mode, list(range(1, {'more': 9, 'renumbered': 4, 'reset': 10}.get(mode, 6))))
        self.day = {'renumbered': 2, 'unfiltered': 2, 'reset': 3}.get(mode, 1)
        self.measurement = Characteristic('2A18', P.NOTIFY, 0, b'')
        self.context = Characteristic('2A34', P.NOTIFY, 0, b'')
        self.racp = Characteristic('2A52', P.WRITE | P.INDICATE, WRITE, CharacteristicValue(write=self.on_racp))
        self.services = [Service(self.SERVICE, [
            self.measurement, self.context,
            Characteristic('2A51', P.READ, READ, struct.pack('<H', 0x0000)),
            self.racp,
        ])]
        # The flooding meter has a battery too: its live level must not wait for the flood.
        self.battery = Characteristic('2A19', P.READ | P.NOTIFY, READ, battery_level(0))
        if mode == 'flood':
            self.services.append(Service('180F', [self.battery]))

    def periodic(self):
        return [(self.battery, False, battery_level)] if self.mode == 'flood' else []

    def on_racp(self, connection, value):
        value = bytes(value)
        self.events('racp-write', {'value': value.hex()})
        if self.mode == 'busy':
            raise att.ATT_Error(0x80)
        loop = asyncio.get_running_loop()
        if value[:1] == b'\x03':
            if self.mode in ('flood', 'endless', 'wronganswer'):
                return  # it floods on purpose: an Abort changes nothing
            if self.mode == 'lagging' and self.task is not None and not self.task.done():
                self.abort_requested = True
                return
            if self.task is not None:
                self.task.cancel()
            self.task = loop.create_task(self.answer(connection, bytes([6, 0, 3, 1])))
            return
        if self.task is not None and not self.task.done():
            raise att.ATT_Error(0x80)
        if self.mode == 'silent':
            return
        if self.mode in ('flood', 'endless', 'wronganswer'):
            self.task = loop.create_task(self.flood(connection))
            return
        self.task = loop.create_task(self.run(connection, value))

    async def flood(self, connection):
        """The hostile modes' answer to any request: values until the link goes."""
        await asyncio.sleep(0.05)
        n = 0
        while True:
            if self.mode == 'flood':
                await self.flooder(connection, self.measurement, bytes([0x02, n & 0xFF]))
                await asyncio.sleep(0.001)
            elif self.mode == 'endless':
                await self.flooder(connection, self.measurement, glucose_measurement(n & 0xFFFF, False))
                await asyncio.sleep(0.02)
            else:
                await self.sender(connection, self.racp, True,
                                  bytes([5, 0, 7, 0]) if n % 2 == 0 else bytes([6, 0, 2, 1]), n)
                await asyncio.sleep(0.3)
            n += 1

    async def answer(self, connection, data):
        await asyncio.sleep(0.05)  # after the Write Response
        await self.sender(connection, self.racp, True, data, 0)

    def select(self, value):
        """The sequence numbers a request's operator and operand pick (None: invalid)."""
        if len(value) < 2:
            return None
        op = value[1]
        if op == 1 or self.mode == 'unfiltered' and op in (2, 3, 4, 5, 6):
            return list(self.numbers)
        if op == 5:
            return self.numbers[:1]
        if op == 6:
            return self.numbers[-1:]
        if op in (2, 3) and len(value) == 5 and value[2] == 1:
            n = int.from_bytes(value[3:5], 'little')
            return [x for x in self.numbers if (x <= n if op == 2 else x >= n)]
        if op == 4 and len(value) == 7 and value[2] == 1:
            a, b = int.from_bytes(value[3:5], 'little'), int.from_bytes(value[5:7], 'little')
            return [x for x in self.numbers if a <= x <= b]
        return None

    async def run(self, connection, value):
        await asyncio.sleep(0.05)
        request = value[0] if value else 0
        chosen = self.select(value)
        if request not in (1, 4):
            return await self.sender(connection, self.racp, True, bytes([6, 0, request, 2]), 0)
        if chosen is None:
            return await self.sender(connection, self.racp, True, bytes([6, 0, request, 3]), 0)
        if request == 4:
            return await self.sender(connection, self.racp, True, bytes([5, 0]) + struct.pack('<H', len(chosen)), 0)
        if not chosen:
            return await self.sender(connection, self.racp, True, bytes([6, 0, 1, 6]), 0)
        order = [3, 1, 2, 2, 5, 4] if self.mode == 'disorder' and value[1] == 1 else chosen
        self.abort_requested = False
        after_abort = 0
        for n in order:
            if self.abort_requested:
                if after_abort == 2:
                    return await self.sender(connection, self.racp, True, bytes([6, 0, 3, 1]), 0)
                after_abort += 1
            await self.sender(connection, self.measurement, False, glucose_measurement(n, n == 2, self.day), n)
            if n == 2:
                await self.sender(connection, self.context, False, glucose_context(n), n)
            await asyncio.sleep(0.25)
        await self.sender(connection, self.racp, True, bytes([6, 0, 1, 1]), 0)
        if self.mode == 'late':
            await self.sender(connection, self.measurement, False, glucose_measurement(6, False), 6)

DATABASES = {'health': HealthDatabase, 'uart': UartDatabase, 'glucose': GlucoseDatabase}
for _mode in ('busy', 'silent', 'disorder', 'late', 'lagging', 'more', 'renumbered', 'nearwrap', 'wrapped',
              'unfiltered', 'reset', 'flood', 'endless', 'wronganswer'):
    DATABASES[f'glucose-{_mode}'] = lambda events, _mode=_mode: GlucoseDatabase(events, _mode)
