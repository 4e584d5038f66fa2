import BluetoothGATT
import BluetoothHost
import BluetoothProfiles
import BluetoothWire

/// Benchmark inputs, exactly as given in the issue so results compare across stacks.
enum Inputs {
    /// 02 01 06 | 0C 09 "Thermo-1234" | 05 03 09 18 0F 18 | 07 FF 4C 00 01 02 03 04
    /// BTHome v2 service data: packet id, battery, temperature, humidity (bthome.io).
    static let bthomeAD: [UInt8] = [0x0E, 0x16, 0xD2, 0xFC, 0x40, 0x00, 0x09, 0x01, 0x5D, 0x02, 0x5D, 0x09, 0x03, 0xB7, 0x18]
    /// bthome-ble's encrypted vector (key below, address 54:48:E6:8F:80:A5): 25.06 °C, 50.55 %.
    static let bthomeEncryptedAD: [UInt8] = [0x12, 0x16, 0xD2, 0xFC, 0x41, 0xA4, 0x72, 0x66, 0xC9, 0x5F, 0x73,
                                             0x00, 0x11, 0x22, 0x33, 0x78, 0x23, 0x72, 0x14]
    static let bthomeKey: [UInt8] = [0x23, 0x1D, 0x39, 0xC1, 0xD7, 0xCC, 0x1A, 0xB1, 0xAE, 0xE2, 0x24, 0xCD, 0x09, 0x6D, 0xB9, 0x32]
    /// Ruuvi's data format 5 example as manufacturer data.
    static let ruuviAD: [UInt8] = [0x1B, 0xFF, 0x99, 0x04, 0x05, 0x12, 0xFC, 0x53, 0x94, 0xC3, 0x7C, 0x00, 0x04, 0xFF, 0xFC,
                                   0x04, 0x0C, 0xAC, 0x36, 0x42, 0x00, 0xCD, 0xCB, 0xB8, 0x33, 0x4C, 0x88, 0x4F]
    static let adPayload: [UInt8] = [0x02, 0x01, 0x06, 0x0C, 0x09] + Array("Thermo-1234".utf8)
        + [0x05, 0x03, 0x09, 0x18, 0x0F, 0x18, 0x07, 0xFF, 0x4C, 0x00, 0x01, 0x02, 0x03, 0x04]
    /// H4 LE Advertising Report: 04 3E 2A 02 01 00 01 E2FD1772E402 1E <adPayload> C4
    static let advertisingReportH4: [UInt8] = [0x04, 0x3E, 0x2A, 0x02, 0x01, 0x00, 0x01,
                                               0xE2, 0xFD, 0x17, 0x72, 0xE4, 0x02, 0x1E] + adPayload + [0xC4]
    /// The same event without the H4 indicator, as HCIEvent parses it.
    static let advertisingReportEvent: [UInt8] = Array(advertisingReportH4.dropFirst())
    /// LE Extended Advertising Report with 2 reports (the AD payload and a short one).
    static let extendedReportEvent: [UInt8] = {
        typealias Owned = LEExtendedAdvertisingReportEvent.Owned
        let a = Owned.Report(eventType: LEExtendedAdvertisingEventType(rawValue: 0x13),
                             address: LEAddress(BluetoothAddress(rawValue: 0x02E4_7217_FDE2), type: .random),
                             rssi: -60, data: adPayload)
        let b = Owned.Report(eventType: LEExtendedAdvertisingEventType(rawValue: 0x1B),
                             address: LEAddress(BluetoothAddress(rawValue: 0xC0FF_EE00_0002), type: .public),
                             rssi: -71, data: [0x02, 0x01, 0x06, 0x03, 0x03, 0x0D, 0x18])
        do { return try Owned([a, b]).encoded() } catch { fatalError("benchmark input: \(error)") }
    }()
    /// ATT Handle Value Notification: handle 0x002A, value 00 6C 01 00 FF (a temperature).
    static let attNotification: [UInt8] = [0x1B, 0x2A, 0x00, 0x00, 0x6C, 0x01, 0x00, 0xFF]
    /// ATT Read By Type Response with 10 characteristic declarations
    /// (handle, properties, value handle, 16-bit UUID): length 7, 72 bytes.
    static let readByTypeResponse: [UInt8] = {
        var pdu: [UInt8] = [0x09, 0x07]
        for i in 0 ..< 10 {
            let handle = UInt16(0x0002 + 3 * i)
            let uuid = UInt16(0x2A00 + i)
            pdu += [UInt8(handle & 0xFF), UInt8(handle >> 8), 0x02,
                    UInt8((handle + 1) & 0xFF), UInt8((handle + 1) >> 8), UInt8(uuid & 0xFF), UInt8(uuid >> 8)]
        }
        return pdu
    }()
    /// The notification above in an L2CAP frame (CID 4) in an ACL packet, handle 0x0040.
    static let notificationACL: [UInt8] = [0x40, 0x20, 0x0C, 0x00, 0x08, 0x00, 0x04, 0x00] + attNotification
    /// Characteristic values with every optional field present (issue 5's decoder cases).
    static let temperatureMeasurement: [UInt8] = [0x07, 0xDA, 0x03, 0x00, 0xFF, 0xEA, 0x07, 0x0B, 0x1D, 0x11, 0x21, 0x05, 0x01]
    static let bloodPressureMeasurement: [UInt8] = [0x1F, 0xA4, 0xF0, 0x6A, 0xF0, 0x7D, 0xF0, 0xEA, 0x07, 0x0B, 0x1D, 0x11,
                                                    0x21, 0x05, 0x48, 0x00, 0x01, 0x0D, 0x00]
    static let heartRateMeasurement: [UInt8] = [0x1F, 0x48, 0x00, 0x2C, 0x01, 0x33, 0x03, 0x40, 0x03, 0x00, 0x03, 0x00, 0x04]
    static let glucoseMeasurement: [UInt8] = [0x1F, 0x0C, 0x00, 0xEA, 0x07, 0x0B, 0x1D, 0x11, 0x21, 0x05, 0x05, 0x00, 0x35,
                                              0xC0, 0x11, 0x01, 0x00]
    static let sfloat: [UInt8] = [0x6C, 0xF1]               // 36.4
    static let float32: [UInt8] = [0x72, 0x01, 0x00, 0xFF]  // 37.0 (mantissa 370, exponent -1)
    /// ATT Read Request for handle 0x0003 (Device Name, "hcigatt-bench").
    static let readRequest: [UInt8] = [0x0A, 0x03, 0x00]
    static let uuid128: [UInt8] = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x0D, 0x18, 0x00, 0x00]
}

/// A GATT server with Generic Access (Device Name at 0x0003) and a Temperature Measurement
/// that notifies (value 0x0010, CCCD 0x0011), one client subscribed.
func benchmarkServer() -> ATTServer {
    let services: [GATTLocalService] = [
        .genericAccess(deviceName: "hcigatt-bench"), .genericAttribute(),
        GATTLocalService(uuid: BluetoothUUID(0x1809), characteristics: [
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A1C), properties: [.read, .notify], value: .stored(Inputs.temperatureMeasurement)),
        ]),
    ]
    guard let table = try? GATTAttributeTable(services: services) else { fatalError("benchmark database") }
    var server = ATTServer(table: table)
    let client = ATTServerClientID(rawValue: 1)
    server.connect(client)
    let subscribe: [UInt8] = [0x12, 0x11, 0x00, 0x01, 0x00]
    ATTServerOutput.withOutput { out in _ = subscribe.withUnsafeBytes { server.receive(from: client, pdu: $0, now: 0, into: &out) } }
    precondition(server.configuration(of: client, valueHandle: 0x0010) == .notify, "benchmark server not subscribed")
    return server
}

/// The benchmark server, built once and mutated in place by the cases, and the buffer its
/// PDUs are written into.
final class ServerBox {
    var server = benchmarkServer()
    let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: ATTServerOutput.capacity, alignment: 1)
    lazy var output = ATTServerOutput(buffer)
    deinit { buffer.deallocate() }
}

/// Reads every field the scan path shows from AD bytes; returns a checksum of them.
@inline(__always)
func decodeAD(_ buf: UnsafeRawBufferPointer) -> UInt64 {
    do throws(WireError) {
        let s = try AdvertisingData(buf).summary()
        var sum = UInt64(s.flags?.rawValue ?? 0)
        sum &+= UInt64(s.localName?.bytes.count ?? 0)
        if let uuids = s.serviceUUIDs16 {
            for u in uuids { sum &+= UInt64(u.uuid16 ?? 0) }
        }
        if let m = s.manufacturerData { sum &+= UInt64(m.companyID) &+ UInt64(m.payload.count) }
        return sum
    } catch {
        return 0
    }
}

/// Parses an HCI event and sums every advertising report's address, RSSI and data length.
@inline(__always)
func parseReports(_ event: UnsafeRawBufferPointer, decodeData: Bool) -> UInt64 {
    do throws(WireError) {
        var sum: UInt64 = 0
        switch try HCIEvent(parsing: event) {
        case .leMeta(.advertisingReport(let e)):
            var it = e.reports
            while let r = try it.next() {
                sum &+= r.address.address.rawValue &+ UInt64(bitPattern: Int64(r.rssi))
                sum &+= decodeData ? decodeAD(r.data) : UInt64(r.data.count)
            }
        case .leMeta(.extendedAdvertisingReport(let e)):
            var it = e.reports
            while let r = try it.next() {
                sum &+= r.address.address.rawValue &+ UInt64(bitPattern: Int64(r.rssi))
                sum &+= decodeData ? decodeAD(r.data) : UInt64(r.data.count)
            }
        default:
            break
        }
        return sum
    } catch {
        return 0
    }
}

/// Every case; with `only`, the shape cases other than that one are left out (each makes
/// its capture and replays it once to count its items: valgrind runs one case at a time).
func allCases(only: String? = nil) -> [BenchmarkCase] {
    fixedCases() + shapeCases(only: only)
}

/// `replay` on every traffic shape in every mode (issue 26): instructions per line shown
/// for the scan-result modes, per packet for `--packets`. 4 000 reports a capture (the
/// crowd's 300 devices all seen, the scannable ones' waits all over); the gatt shape has
/// no scan results, only packets.
func shapeCases(only: String? = nil) -> [BenchmarkCase] {
    var cases: [BenchmarkCase] = []
    for shape in CaptureShape.allCases {
        let modes = ReplayMode.allCases.filter { mode in
            (shape != .gatt || mode.packets) && (only == nil || only == shapeCaseName(shape, mode))
        }
        if modes.isEmpty { continue }
        let capture = shape.capture(reports: 4000)
        // The bonded shape replays with its bonds' IRKs, as `replay --bond-dir` does.
        let keys = shape == .bonded ? CaptureShape.bondedEntries() : []
        for mode in modes {
            let counts = capture.withUnsafeBytes { ScanPipeline.replay($0, mode, resolving: keys) }
            cases.append(BenchmarkCase(name: shapeCaseName(shape, mode), targetNanos: nil,
                                       itemsPerOp: mode.packets ? counts.packets : counts.lines,
                                       allowsAllocations: true) { n in
                capture.withUnsafeBytes { buf in
                    var sum: UInt64 = 0
                    for _ in 0 ..< n { sum &+= ScanPipeline.replay(buf, mode, resolving: keys).bytes }
                    return sum
                }
            })
        }
    }
    return cases
}

func shapeCaseName(_ shape: CaptureShape, _ mode: ReplayMode) -> String {
    "shape \(shape.rawValue) \(mode.name), per \(mode.packets ? "packet" : "line")"
}

func fixedCases() -> [BenchmarkCase] {
    [
        // A live host's notification path (NotifyRig): one notification, GATTServer.notify
        // to the ACL packet written to the transport, the controller's completion read back.
        BenchmarkCase(name: "GATT server notify (to transport write)", targetNanos: nil, allowsAllocations: true) { n in
            NotifyRig.shared.run(n)
        },
        BenchmarkCase(name: "HCI LE Advertising Report", targetNanos: nil) { [input = RotatingInput(Inputs.advertisingReportEvent)] n in
            input.run(n) { buf in parseReports(buf, decodeData: false) }
        },
        BenchmarkCase(name: "HCI LE Ext Adv Report (2)", targetNanos: nil) { [input = RotatingInput(Inputs.extendedReportEvent)] n in
            input.run(n) { buf in parseReports(buf, decodeData: false) }
        },
        BenchmarkCase(name: "scan end to end (H4 -> AD)", targetNanos: 100) { [input = RotatingInput(Inputs.advertisingReportH4)] n in
            input.run(n) { buf in
                do throws(WireError) {
                    let frame = try H4Frame.parse(buf)
                    guard frame.type == .event else { return 0 }
                    return parseReports(frame.packet, decodeData: true)
                } catch {
                    return 0
                }
            }
        },
        BenchmarkCase(name: "ATT notification", targetNanos: 10) { [input = RotatingInput(Inputs.attNotification)] n in
            input.run(n) { buf in
                do throws(WireError) {
                    guard case .handleValueNotification(let v) = try ATTPDU(parsing: buf) else { return 0 }
                    return UInt64(v.handle) &+ UInt64(v.value.count)
                } catch {
                    return 0
                }
            }
        },
        BenchmarkCase(name: "notification: ACL -> L2CAP -> ATT -> value", targetNanos: nil,
                      allowsAllocations: true) { [input = RotatingInput(Inputs.notificationACL)] n in
            // The host's receive path without the socket: parse the ACL packet, reassemble
            // (a whole frame is handed over as a view), and let the ATT client recognise the
            // notification. The one allocation per op is the delivered value.
            var reassembler = L2CAPReassembler()
            var att = ATTClient()
            return input.run(n) { buf in
                var sum: UInt64 = 0
                do throws(WireError) {
                    let p = try ACLPacket(parsing: buf)
                    _ = reassembler.append(handle: p.header.handle, boundary: p.header.packetBoundary, fragment: p.payload) { _, cid, frame in
                        guard cid == .att, let v = att.receiveNotification(bytes: frame) else { return }
                        sum &+= UInt64(v.handle) &+ UInt64(v.value.count)
                    }
                } catch {}
                return sum
            }
        },
        // The server is built once per case (setup allocates); each operation then answers
        // from the stored value into a stack buffer: no allocation.
        BenchmarkCase(name: "ATT server: Read Request, static value", targetNanos: nil) {
            [input = RotatingInput(Inputs.readRequest), box = ServerBox()] n in
            let client = ATTServerClientID(rawValue: 1)
            return input.run(n) { buf in
                var sum: UInt64 = 0
                _ = box.server.receive(from: client, pdu: buf, now: 0, into: &box.output)
                let out = box.output.pdu
                sum &+= UInt64(out.count) &+ UInt64(out[1])
                return sum
            }
        },
        BenchmarkCase(name: "ATT server: notification sent", targetNanos: nil) {
            [input = RotatingInput(Inputs.temperatureMeasurement), box = ServerBox()] n in
            let client = ATTServerClientID(rawValue: 1)
            return input.run(n) { buf in
                var sum: UInt64 = 0
                do throws(ATTServerError) {
                    try box.server.notify(client, handle: 0x0010, value: buf, into: &box.output)
                    let out = box.output.pdu
                    sum &+= UInt64(out.count) &+ UInt64(out[3])
                } catch {}
                return sum
            }
        },
        BenchmarkCase(name: "ATT Read By Type Rsp (10)", targetNanos: nil) { [input = RotatingInput(Inputs.readByTypeResponse)] n in
            input.run(n) { buf in
                do throws(WireError) {
                    guard case .readByTypeResponse(let list) = try ATTPDU(parsing: buf) else { return 0 }
                    var sum: UInt64 = 0
                    for e in list { sum &+= UInt64(e.handle) &+ UInt64(e.value.count) }
                    return sum
                } catch {
                    return 0
                }
            }
        },
        BenchmarkCase(name: "AD decode (30 B)", targetNanos: 60) { [input = RotatingInput(Inputs.adPayload)] n in
            input.run(n) { buf in decodeAD(buf) }
        },
        // Broadcast sensor frames (AD structures): found, parsed, every value read.
        BenchmarkCase(name: "BTHome v2 frame -> values", targetNanos: nil) { [input = RotatingInput(Inputs.bthomeAD)] n in
            input.run(n) { buf in sensorSum(buf) }
        },
        BenchmarkCase(name: "BTHome v2 encrypted -> values", targetNanos: nil) { [input = RotatingInput(Inputs.bthomeEncryptedAD)] n in
            input.run(n) { buf in sensorSum(buf, key: Inputs.bthomeKey) }
        },
        BenchmarkCase(name: "Ruuvi RAWv2 frame -> values", targetNanos: nil) { [input = RotatingInput(Inputs.ruuviAD)] n in
            input.run(n) { buf in sensorSum(buf) }
        },
        BenchmarkCase(name: "SFLOAT 6C F1 -> 36.4", targetNanos: 5) { [input = RotatingInput(Inputs.sfloat)] n in
            input.run(n) { buf in
                var r = ByteReader(buf)
                do throws(WireError) { return try SFloat.read(&r).doubleValue.bitPattern } catch { return 0 }
            }
        },
        BenchmarkCase(name: "FLOAT 72 01 00 FF -> 37.0", targetNanos: 5) { [input = RotatingInput(Inputs.float32)] n in
            input.run(n) { buf in
                var r = ByteReader(buf)
                do throws(WireError) { return try MedFloat32.read(&r).doubleValue.bitPattern } catch { return 0 }
            }
        },
        BenchmarkCase(name: "uuid128 parse", targetNanos: nil) { [input = RotatingInput(Inputs.uuid128)] n in
            input.run(n) { buf in
                do throws(WireError) { return try BluetoothUUID(wire: buf).high } catch { return 0 }
            }
        },
        BenchmarkCase(name: "replay 10k reports, all new -> JSON", targetNanos: nil,
                      itemsPerOp: ScanPipeline.reportCount, allowsAllocations: true, maxAllocationsPerItem: 0.05) { [capture = ScanPipeline.capture(devices: 10_000)] n in
            capture.withUnsafeBytes { buf in
                var sum: UInt64 = 0
                for _ in 0 ..< n { sum &+= ScanPipeline.replay(buf) }
                return sum
            }
        },
        BenchmarkCase(name: "replay 10k reports, all new -> text", targetNanos: nil,
                      itemsPerOp: ScanPipeline.reportCount, allowsAllocations: true, maxAllocationsPerItem: 0.05) { [capture = ScanPipeline.capture(devices: 10_000)] n in
            capture.withUnsafeBytes { buf in
                var sum: UInt64 = 0
                for _ in 0 ..< n { sum &+= ScanPipeline.replay(buf, json: false) }
                return sum
            }
        },
        BenchmarkCase(name: "replay --packets 10k reports -> text", targetNanos: nil,
                      itemsPerOp: ScanPipeline.reportCount, allowsAllocations: true) { [capture = ScanPipeline.capture(devices: 10_000)] n in
            capture.withUnsafeBytes { buf in
                var sum: UInt64 = 0
                for _ in 0 ..< n { sum &+= ScanPipeline.replay(buf, packets: true, json: false) }
                return sum
            }
        },
        BenchmarkCase(name: "replay 10k reports, 100 devices", targetNanos: nil,
                      itemsPerOp: ScanPipeline.reportCount, allowsAllocations: true) { [capture = ScanPipeline.capture(devices: 100)] n in
            capture.withUnsafeBytes { buf in
                var sum: UInt64 = 0
                for _ in 0 ..< n { sum &+= ScanPipeline.replay(buf) }
                return sum
            }
        },
        BenchmarkCase(name: "2A1C temperature, all flags", targetNanos: 50) { [input = RotatingInput(Inputs.temperatureMeasurement)] n in
            input.run(n) { buf in
                do throws(WireError) {
                    let m = try TemperatureMeasurement(parsing: buf)
                    return m.temperature.doubleValue.bitPattern &+ UInt64(m.timestamp?.seconds ?? 0)
                        &+ UInt64(m.temperatureType?.rawValue ?? 0)
                } catch { return 0 }
            }
        },
        BenchmarkCase(name: "2A35 blood pressure, all flags", targetNanos: 50) { [input = RotatingInput(Inputs.bloodPressureMeasurement)] n in
            input.run(n) { buf in
                do throws(WireError) {
                    let m = try BloodPressureMeasurement(parsing: buf)
                    return m.systolic.doubleValue.bitPattern &+ m.diastolic.doubleValue.bitPattern
                        &+ m.meanArterialPressure.doubleValue.bitPattern &+ (m.pulseRate?.doubleValue.bitPattern ?? 0)
                        &+ UInt64(m.userID ?? 0) &+ UInt64(m.measurementStatus?.rawValue ?? 0)
                } catch { return 0 }
            }
        },
        BenchmarkCase(name: "2A37 heart rate, 4 RR intervals", targetNanos: 50) { [input = RotatingInput(Inputs.heartRateMeasurement)] n in
            input.run(n) { buf in
                do throws(WireError) {
                    let m = try HeartRateMeasurement(parsing: buf)
                    var sum = UInt64(m.heartRate) &+ UInt64(m.energyExpended ?? 0)
                    for rr in m.rrIntervals { sum &+= UInt64(rr.rawValue) }
                    return sum
                } catch { return 0 }
            }
        },
        BenchmarkCase(name: "2A18 glucose, all flags", targetNanos: 50) { [input = RotatingInput(Inputs.glucoseMeasurement)] n in
            input.run(n) { buf in
                do throws(WireError) {
                    let m = try GlucoseMeasurement(parsing: buf)
                    return UInt64(m.sequenceNumber) &+ (m.concentration?.doubleValue.bitPattern ?? 0)
                        &+ UInt64(m.timeOffset.map { UInt16(bitPattern: $0) } ?? 0)
                } catch { return 0 }
            }
        },
        BenchmarkCase(name: "sanity: 1 array alloc per op", targetNanos: nil) { n in
            var sum: UInt64 = 0
            for i in 0 ..< n {
                let a = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 8 + i & 7)
                sum &+= UInt64(a.count)
            }
            return sum
        },
    ]
}

/// The broadcast reading in `buf` (AD structures), every value summed; 0 when none.
@inline(never)
func sensorSum(_ buf: UnsafeRawBufferPointer, key: [UInt8]? = nil) -> UInt64 {
    guard case .success(let sensor)? = AdvertisedSensor.find(in: AdvertisingData(buf)) else { return 0 }
    func objects(_ o: BTHomeObjects) -> UInt64 {
        var sum: UInt64 = 0
        var r = o.makeReader()
        while let object = try? r.next() { sum &+= object.number.bitPattern }
        return sum
    }
    switch sensor {
    case .bthome(let b):
        guard b.isEncrypted else { return objects(b.objects) }
        guard let key else { return 0 }
        return withUnsafeTemporaryAllocation(byteCount: b.payload.count, alignment: 1) { plain in
            let ok = key.withUnsafeBytes { b.decrypt(key: $0, address: BluetoothAddress(rawValue: 0x5448_E68F_80A5), into: plain) }
            return ok ? objects(BTHomeObjects(UnsafeRawBufferPointer(plain))) : 0
        }
    case .ruuvi(let r):
        return (r.temperature ?? 0).bitPattern &+ (r.humidity ?? 0).bitPattern &+ (r.pressure ?? 0).bitPattern
            &+ UInt64(r.measurementSequence ?? 0)
    case .thermometer(let t):
        return t.temperature.bitPattern &+ t.humidity.bitPattern
    }
}
