import BluetoothGATT
import BluetoothHost
import BluetoothLE
import BluetoothProfiles
import BluetoothWire
import FakeController
import Synchronization
import Testing

/// Stored records end to end in the library: ``RecordTransfer`` (the collector) against
/// ``StoredRecords`` (the sensor) on two hosts of ours over a FakeAir.
@Suite struct RecordTransferTests {
    static func reading(_ n: UInt16, context: Bool) -> StoredRecords.Record {
        let time = DateTime(year: 2026, month: 12, day: 1, hours: UInt8(n), minutes: 0, seconds: 0)
        var values = [StoredRecords.Value(BluetoothUUID(0x2A18), (try? GlucoseMeasurement(
            sequenceNumber: n, baseTime: time, timeOffset: 90, contextFollows: context).encoded()) ?? [])]
        if context {
            values.append(StoredRecords.Value(BluetoothUUID(0x2A34), (try? GlucoseMeasurementContext(
                sequenceNumber: n, meal: .preprandial).encoded()) ?? []))
        }
        return StoredRecords.Record(sequenceNumber: n, values: values)
    }

    /// A meter serving `store` (no encryption asked: the FakeAir pairs too, but this is about RACP).
    static func meter(_ rig: GATTPeerTests.Rig, _ store: StoredRecords, context: Bool = true) async throws -> (GATTServer, Task<Void, Never>) {
        var characteristics = [GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A18), properties: .notify)]
        if context { characteristics.append(GATTLocalCharacteristic(uuid: BluetoothUUID(0x2A34), properties: .notify)) }
        characteristics.append(GATTLocalCharacteristic(uuid: RecordAccessControlPoint.uuid, properties: [.write, .indicate],
                                                       maximumLength: 20, onWrite: store.writeHandler))
        let (server, serving) = try await rig.serve([GATTLocalService(uuid: BluetoothUUID(0x1808), characteristics: characteristics)])
        #expect(store.attach(to: server))
        let events = Task { for await e in server.events { store.handle(e, on: server) } }
        return (server, Task {
            await withTaskCancellationHandler { await serving.value } onCancel: { serving.cancel(); events.cancel() }
        })
    }

    static func collect(_ transfer: RecordTransfer) async throws -> ([StoredRecord], RACPClient.Summary?) {
        var records: [StoredRecord] = [], end: RACPClient.Summary?
        for try await e in transfer {
            switch e {
            case .record(let r): records.append(r)
            case .finished(let s): end = s
            case .malformed, .collected: Issue.record("unexpected: \(e)")
            }
        }
        return (records, end)
    }

    /// The values of a raw subscription up to and including the control point's answer.
    static func untilAnswer(_ values: AsyncThrowingStream<GATTValue, any Error>, racp: GATTCharacteristic) async throws -> [[UInt8]] {
        var got: [[UInt8]] = []
        for try await v in values {
            got.append(v.value)
            if v.handle == racp.valueHandle { break }
        }
        return got
    }

    @Test("Report all, ≥, last, count and delete: records whole (context joined), in order, then the answer")
    func reportsCountAndDelete() async throws {
        let rig = try await GATTPeerTests.Rig()
        let store = StoredRecords(service: BluetoothUUID(0x1808), recordCharacteristic: BluetoothUUID(0x2A18),
                                  records: (1 ... 5).map { Self.reading($0, context: $0 % 2 == 0) })
        let (_, serving) = try await Self.meter(rig, store)
        let peer = try await rig.open()
        let db = try await peer.discover().discovery.database
        func run(_ r: RecordRequest) async throws -> ([StoredRecord], RACPClient.Summary?) {
            try await Self.collect(try await RecordTransfer.start(r, service: .glucose, on: peer.client, database: db))
        }
        var (records, end) = try await run(.report(.all))
        #expect(records.map(\.sequenceNumber) == [1, 2, 3, 4, 5])
        #expect(records.map { $0.context != nil } == [false, true, false, true, false])
        if case .glucose(_, let ctx?) = records[1].decoded { #expect(ctx.sequenceNumber == 2 && ctx.meal == .preprandial) }
        #expect(records[0].measurementTime == DateTime(year: 2026, month: 12, day: 1, hours: 2, minutes: 30, seconds: 0),
                "base time plus the 90-minute offset")
        #expect(end?.outcome == .answered(.success) && end?.records == 5 && end?.duplicates == 0)
        (records, end) = try await run(.report(.atLeast(4)))
        #expect(records.map(\.sequenceNumber) == [4, 5] && end?.outcome == .answered(.success))
        (records, end) = try await run(.report(.last))
        #expect(records.map(\.sequenceNumber) == [5])
        (records, end) = try await run(.count(.all))
        #expect(records.isEmpty && end?.outcome == .count(5))
        (records, end) = try await run(.delete(.atMost(2)))
        #expect(end?.outcome == .answered(.success) && store.sequenceNumbers == [3, 4, 5])
        (records, end) = try await run(.report(.within(1 ... 2)))
        #expect(records.isEmpty && end?.outcome == .answered(.noRecordsFound))
        await rig.close(peer)
        serving.cancel()
        await rig.shutDown()
    }

    @Test("New records after a position: all, none, the newer, a reset meter (more readings or fewer), a wrap")
    func newRecordsAfterAPosition() async throws {
        func record(_ n: UInt16, day: UInt8) -> StoredRecords.Record {
            let time = DateTime(year: 2026, month: 12, day: day, hours: UInt8(n % 24), minutes: 0, seconds: 0)
            return StoredRecords.Record(sequenceNumber: n, values: [StoredRecords.Value(BluetoothUUID(0x2A18), (try? GlucoseMeasurement(
                sequenceNumber: n, baseTime: time).encoded()) ?? [])])
        }
        let rig = try await GATTPeerTests.Rig()
        let store = StoredRecords(service: BluetoothUUID(0x1808), records: (1 ... 5).map { record($0, day: 1) })
        let (_, serving) = try await Self.meter(rig, store, context: false)
        let peer = try await rig.open()
        let db = try await peer.discover().discovery.database
        func new(after p: RecordPosition?) async throws -> ([UInt16?], Bool) {
            let n = try await RecordTransfer.newRecords(after: p, service: .glucose, on: peer.client, database: db)
            return (n.records.map(\.sequenceNumber), n.renumbered)
        }
        func reset(to numbers: [UInt16], day: UInt8) async throws {
            _ = try await Self.collect(try await RecordTransfer.start(.delete(.all), service: .glucose, on: peer.client, database: db))
            for n in numbers { store.append(record(n, day: day)) }
        }
        func position(_ n: UInt16, day: UInt8) -> RecordPosition? {
            RecordPosition(sequenceNumber: n, time: DateTime(year: 2026, month: 12, day: day, hours: UInt8(n % 24), minutes: 0, seconds: 0).secondsSince1970)
        }
        var (numbers, renumbered) = try await new(after: nil)
        #expect(numbers == [1, 2, 3, 4, 5] && !renumbered)
        (numbers, renumbered) = try await new(after: position(5, day: 1))
        #expect(numbers == [] && !renumbered, "at the position")
        store.append(record(6, day: 1))
        store.append(record(7, day: 1))
        (numbers, renumbered) = try await new(after: position(5, day: 1))
        #expect(numbers == [6, 7] && !renumbered)
        (numbers, renumbered) = try await new(after: RecordPosition(sequenceNumber: 5))
        #expect(numbers == [6, 7] && !renumbered, "a position without a time: by number")
        // Reset, and since more readings than the position counts: its #7 has another time.
        try await reset(to: Array(1 ... 9), day: 2)
        (numbers, renumbered) = try await new(after: position(7, day: 1))
        #expect(numbers == Array(1 ... 9) && renumbered)
        // Reset with as many readings as the position: its newest is the position's number.
        (numbers, renumbered) = try await new(after: position(9, day: 1))
        #expect(numbers == Array(1 ... 9) && renumbered)
        // Reset with fewer: behind the position.
        try await reset(to: [1, 2, 3], day: 3)
        (numbers, renumbered) = try await new(after: position(9, day: 2))
        #expect(numbers == [1, 2, 3] && renumbered)
        // Past 65535: both sides of the wrap, not a renumbering.
        try await reset(to: [65534, 65535, 0, 1], day: 4)
        (numbers, renumbered) = try await new(after: position(65535, day: 4))
        #expect(numbers == [0, 1] && !renumbered)
        (numbers, renumbered) = try await new(after: position(65534, day: 4))
        #expect(numbers == [65535, 0, 1] && !renumbered)
        await rig.close(peer)
        serving.cancel()
        await rig.shutDown()
    }

    @Test("A CGM whose newest record fails its E2E-CRC: the good ones before it are still synced")
    func cgmNewestMalformed() async throws {
        func record(_ minute: UInt16, badCRC: Bool = false) throws -> StoredRecords.Record {
            var bytes = try CGMMeasurement(concentration: SFloat(rawValue: 100 + minute), timeOffset: minute, withCRC: true).encoded()
            if badCRC { bytes[bytes.count - 1] ^= 0xFF }
            return StoredRecords.Record(sequenceNumber: minute, values: [StoredRecords.Value(BluetoothUUID(0x2AA7), bytes)])
        }
        let rig = try await GATTPeerTests.Rig()
        let store = StoredRecords(service: BluetoothUUID(0x181F), recordCharacteristic: BluetoothUUID(0x2AA7), rules: .cgm,
                                  records: [try record(5), try record(10), try record(15, badCRC: true)])
        let (server, serving) = try await rig.serve([GATTLocalService(uuid: BluetoothUUID(0x181F), characteristics: [
            GATTLocalCharacteristic(uuid: BluetoothUUID(0x2AA7), properties: .notify),
            GATTLocalCharacteristic(uuid: RecordAccessControlPoint.uuid, properties: [.write, .indicate], maximumLength: 20,
                                    onWrite: store.writeHandler),
        ])])
        #expect(store.attach(to: server))
        let events = Task { for await e in server.events { store.handle(e, on: server) } }
        let peer = try await rig.open()
        let db = try await peer.discover().discovery.database
        let new = try await RecordTransfer.newRecords(after: RecordPosition(sequenceNumber: 5), service: .cgm, on: peer.client, database: db)
        #expect(new.records.map(\.sequenceNumber) == [10] && !new.renumbered)
        #expect(new.malformed.count >= 1, "the newest, disowned by its CRC, said")
        await rig.close(peer)
        events.cancel()
        serving.cancel()
        await rig.shutDown()
    }

    @Test("A Write Command to the control point starts nothing; the next request is not busy")
    func writeCommandIsRefused() async throws {
        let rig = try await GATTPeerTests.Rig()
        let store = StoredRecords(service: BluetoothUUID(0x1808), records: [Self.reading(7, context: false)])
        let (_, serving) = try await Self.meter(rig, store, context: false)
        let peer = try await rig.open()
        let db = try await peer.discover().discovery.database
        let racp = try #require(db.characteristic(uuid: RecordAccessControlPoint.uuid))
        // Subscribed, so the request would be good; as a Write Command nobody could be answered.
        let values = try await peer.client.subscribe([(try #require(db.characteristic(uuid: BluetoothUUID(0x2A18))), indicate: false),
                                                      (racp, indicate: true)])
        try await peer.client.writeWithoutResponse(handle: racp.valueHandle, value: [1, 1])
        _ = try await peer.client.read(handle: 1)  // the command was handled before this answer
        _ = values
        let (records, end) = try await Self.collect(try await RecordTransfer.start(.report(.all), service: .glucose,
                                                                                     on: peer.client, database: db))
        #expect(records.map(\.sequenceNumber) == [7] && end?.outcome == .answered(.success))
        await rig.close(peer)
        serving.cancel()
        await rig.shutDown()
    }

    @Test("A second request before the first is answered: Procedure Already In Progress (0x80), the first goes on")
    func aSecondRequestIsBusy() async throws {
        let rig = try await GATTPeerTests.Rig()
        let store = StoredRecords(service: BluetoothUUID(0x1808), records: (1 ... 3).map { Self.reading($0, context: false) })
        let (_, serving) = try await Self.meter(rig, store, context: false)
        let peer = try await rig.open()
        let db = try await peer.discover().discovery.database
        let racp = try #require(db.characteristic(uuid: RecordAccessControlPoint.uuid))
        let values = try await peer.client.subscribe([(try #require(db.characteristic(uuid: BluetoothUUID(0x2A18))), indicate: false),
                                                      (racp, indicate: true)])
        try await peer.client.write(handle: racp.valueHandle, value: [1, 1])
        do {
            try await peer.client.write(handle: racp.valueHandle, value: [4, 1])
            Issue.record("a second request was taken")
        } catch {
            #expect(error.attErrorCode == ATTErrorCode(rawValue: 0x80))
        }
        let got = try await Self.untilAnswer(values, racp: racp)
        #expect(got.count == 4 && got.last == [6, 0, 1, 1], "the first request's three records and its answer: \(got)")
        await rig.close(peer)
        serving.cancel()
        await rig.shutDown()
    }

    @Test("Without the context characteristic subscribed a collector still gets every measurement")
    func contextsAreOptionalForTheCollector() async throws {
        let rig = try await GATTPeerTests.Rig()
        let store = StoredRecords(service: BluetoothUUID(0x1808), recordCharacteristic: BluetoothUUID(0x2A18),
                                  records: (1 ... 3).map { Self.reading($0, context: true) })
        let (_, serving) = try await Self.meter(rig, store)
        let peer = try await rig.open()
        let db = try await peer.discover().discovery.database
        let racp = try #require(db.characteristic(uuid: RecordAccessControlPoint.uuid))
        let measurement = try #require(db.characteristic(uuid: BluetoothUUID(0x2A18)))
        let values = try await peer.client.subscribe([(measurement, indicate: false), (racp, indicate: true)])
        try await peer.client.write(handle: racp.valueHandle, value: [1, 1])
        let got = try await Self.untilAnswer(values, racp: racp)
        #expect(got.count == 4 && got.last == [6, 0, 1, 1], "three measurements, then Success: \(got)")
        await rig.close(peer)
        serving.cancel()
        await rig.shutDown()
    }
}
