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
    let log: @Sendable (String) -> Void

    /// The plan's setup step: before the measurements are subscribed to, so the records'
    /// own notifications are not taken as live readings too. Never throws: a device whose
    /// records cannot be had is still followed.
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
            var restarts = false
            var records: [StoredRecord] = []
            var said: String
            if let m = mark {
                // The newest record says where the device is: ahead of the mark (new records,
                // maybe past a wrap of the numbers), at it (nothing new), or behind it (it
                // forgot its records and numbers anew). Records come oldest first, so the last
                // one is the newest also from a device that ignores the operator.
                let (last, summary) = try await fetch(.last, service, client, db)
                said = Self.describe(summary)
                if last.isEmpty, summary.outcome != .answered(.success), summary.outcome != .answered(.noRecordsFound) {
                    // A meter that cannot report its last record: all of them, the newer published.
                    (records, said) = try await fetchDescribed(.all, service, client, db)
                } else if let n = last.last?.sequenceNumber, n != m {
                    if RecordMarks.isAfter(n, m) {
                        if m != .max { (records, said) = try await fetchDescribed(.atLeast(m &+ 1), service, client, db) }
                        if n < m {
                            let (wrapped, after) = try await fetchDescribed(.within(0 ... n), service, client, db)
                            records += wrapped
                            said = after
                        }
                    } else {
                        log("\(who): its records are numbered anew (newest #\(n), #\(m) was published): fetching them all")
                        (records, said) = try await fetchDescribed(.all, service, client, db)
                        restarts = true
                    }
                } else if let n = last.last?.sequenceNumber {
                    said = "newest #\(n) published already"
                }
            } else {
                (records, said) = try await fetchDescribed(.all, service, client, db)
            }
            var published = 0
            for r in records {
                guard let n = r.sequenceNumber else { continue }
                // Only what was not published (a device may ignore the filter).
                if !restarts, let m = mark, !RecordMarks.isAfter(n, m) { continue }
                runtime.submit(ConnectedReadings.record(r, device: device, name: name,
                                                        mark: RecordMarks.Mark(device: device, sequenceNumber: n, restarts: restarts && published == 0)))
                published += 1
            }
            log("\(who): \(published) new stored record\(published == 1 ? "" : "s") (\(said))")
        } catch {
            log("\(who): stored records not fetched: \(error.message)")
        }
    }

    private func fetchDescribed(_ selection: RecordSelection, _ service: RecordService, _ client: GATTClient, _ db: GATTDatabase)
        async throws(BluetoothError) -> ([StoredRecord], String)
    {
        let (records, summary) = try await fetch(selection, service, client, db)
        return (records, Self.describe(summary))
    }

    private func fetch(_ selection: RecordSelection, _ service: RecordService, _ client: GATTClient, _ db: GATTDatabase)
        async throws(BluetoothError) -> ([StoredRecord], RACPClient.Summary)
    {
        let transfer = try await RecordTransfer.start(.report(selection), service: service, on: client, database: db)
        var records: [StoredRecord] = []
        do {
            for try await e in transfer {
                switch e {
                case .record(let r): records.append(r)
                case .malformed(let uuid, _, let error): log("\(GatewayNaming.deviceLevel(device)): a malformed stored \(uuid) value: \(error)")
                case .finished(let s):
                    // Values lost on the way leave a gap the mark would pass: publish none of
                    // these and ask again on the next connection (a duplicate, never a loss).
                    if s.lost > 0 {
                        throw BluetoothError(.protocolViolation, "\(s.lost) value\(s.lost == 1 ? "" : "s") lost on the way; asked again next time")
                    }
                    return (records, s)
                case .collected:
                    break  // a ReadingCollection's, not a transfer's
                }
            }
        } catch let e as BluetoothError {
            throw e
        } catch {
            throw BluetoothError(.disconnected, "\(error)")
        }
        throw BluetoothError(.protocolViolation, "the record transfer ended without an answer")
    }

    static func describe(_ s: RACPClient.Summary) -> String {
        let outcome = switch s.outcome {
        case .answered(let code): code.name
        case .count(let n): "\(n) held"
        case .aborted: "aborted"
        case .timedOut: "timed out"
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
        r.measurement.withUnsafeBytes { raw in
            if let d = (try? CharacteristicDecoder.decode(uuid: uuid, value: raw)) ?? nil {
                fields += d.fields
                if case .text(let u)? = d.fields.first(where: { $0.name == "unit" })?.value { unit = u }
            }
        }
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
