import BluetoothGATT
import BluetoothLE
import BluetoothProfiles
import BluetoothWire
import HCIGATTFormat

/// `gateway --records`: on each connection to a followed device, its stored records newer
/// than those published (``RecordMarks``), each a reading at its own measurement time.
struct GatewayRecordFetch: Sendable {
    let device: BluetoothAddress
    let runtime: GatewayRuntime
    let limits: RACPClient.Limits
    let log: @Sendable (String) -> Void

    /// The plan's setup step: before the measurements are subscribed to, so the records'
    /// own notifications are not taken as live readings too. Never throws: a device whose
    /// records cannot be had is still followed. Bounded by `limits`: a device that floods
    /// or never answers holds its subscriptions back no longer than the deadline.
    func run(_ client: GATTClient, _ db: GATTDatabase) async {
        guard let service = RecordService.allCases.first(where: { s in s.hasControlPoint &&
            db.services.contains { $0.uuid == s.uuid && $0.characteristics.contains { $0.uuid == RecordAccessControlPoint.uuid } }
        }) else { return }
        let who = GatewayNaming.deviceLevel(device)
        guard service.hasSequenceNumbers else {
            log("\(who): the \(service.name) Service's records carry no sequence numbers: not fetched (it would publish them all on every connection)")
            return
        }
        var name: String?
        if let c = db.characteristic(uuid: BluetoothUUID(0x2A00)), c.properties.contains(.read),
           let v = try? await client.read(handle: c.valueHandle) { name = ValueFormat.text(v) }
        let mark = runtime.recordMarks.mark(of: device)
        do throws(BluetoothError) {
            // What is new is the library's policy (RecordTransfer.newRecords): the newest
            // record against the mark, a wrap, a reset meter told by its record's time.
            let new = try await RecordTransfer.newRecords(after: mark, service: service, on: client, database: db, limits: limits)
            for (uuid, _, error) in new.malformed { log("\(who): a malformed stored \(uuid) value: \(error)") }
            if new.malformedCount > new.malformed.count {
                log("\(who): \(new.malformedCount - new.malformed.count) more malformed stored values dropped")
            }
            if new.renumbered, let m = mark {
                log("\(who): its records are numbered anew (it was reset since #\(m.sequenceNumber) was published): fetching them all")
            }
            var published = 0
            for r in new.records {
                guard let p = RecordPosition(of: r) else { continue }
                runtime.submit(ConnectedReadings.record(r, device: device, name: name,
                                                        mark: RecordMarks.Mark(device: device, sequenceNumber: p.sequenceNumber, time: p.time,
                                                                               restarts: new.renumbered && published == 0)))
                published += 1
            }
            var said = Self.describe(new.summary)
            if new.records.isEmpty, let m = mark, !new.renumbered, new.summary.outcome == .answered(.success) {
                said = "newest #\(m.sequenceNumber) published already"
            }
            log("\(who): \(published) new stored record\(published == 1 ? "" : "s") (\(said))")
        } catch {
            log("\(who): stored records not fetched: \(error.message)")
        }
    }

    static func describe(_ s: RACPClient.Summary) -> String {
        let outcome = switch s.outcome {
        case .answered(let code): code.name
        case .count(let n): "\(n) held"
        case .aborted: "aborted"
        case .timedOut: "timed out"
        case .exceeded(.procedureTimeout(let ns)): "given up after \(RACPClient.Limit.seconds(ns)) s"
        case .exceeded(.values(let n)): "given up after \(n) values"
        }
        return s.lost > 0 ? "\(outcome); \(s.lost) lost on the way" : outcome
    }
}

extension ConnectedReadings {
    /// A stored record as a reading of its measurement characteristic (`glucose_measurement`),
    /// at its own measurement time (the device's clock, taken as UTC; now when it gives no
    /// date), with `"stored": true` and its context as an object.
    public static func record(_ r: StoredRecord, device: BluetoothAddress, name: String?, mark: RecordMarks.Mark) -> PendingReading {
        let uuid = r.service.recordCharacteristic
        let label = AssignedNumbers.characteristicName(uuid) ?? uuid.description
        var fields: [Field] = [Field("uuid", .text(uuid.description)), Field("characteristic", .text(label)), Field("stored", .bool(true))]
        var unit: String?
        let measured = r.measurementFields
        fields += measured
        if case .text(let u)? = measured.first(where: { $0.name == "unit" })?.value { unit = u }
        if let context = r.context, let cu = r.service.contextCharacteristic {
            context.withUnsafeBytes { raw in
                if let d = (try? CharacteristicDecoder.decode(uuid: cu, value: raw)) ?? nil { fields.append(Field("context", .object(d.fields))) }
            }
        }
        fields.append(Field("hex", .bytes(r.measurement)))
        let milliseconds = r.measurementTime?.secondsSince1970.map { $0 * 1000 } ?? GatewayClock.nowMilliseconds()
        var reading = PendingReading(device: device, heardAs: nil, measurement: measurementName(label), milliseconds: milliseconds,
                                     rssi: nil, fields: fields,
                                     info: HomeAssistantDevice(address: device, name: name, manufacturer: "Bluetooth LE", model: label),
                                     unit: unit)
        reading.record = mark
        return reading
    }
}
