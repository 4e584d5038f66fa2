import Synchronization
import BluetoothWire
import Testing
@testable import BluetoothGATT

/// The GATT client against an in-memory server (FakeATTServer).
@Suite struct GATTClientTests {
    @Test("GATT/CL/GAD/BV-01-C, BV-03-C, BV-04-C, BV-06-C: Discover the whole database, handle by handle") func fullDiscoveryMatchesTheServerHandleByHandle() async throws {
        let (server, client, db) = makeClient(mtu: 517)
        let found = try await client.discoverAll()
        #expect(found.services.count == db.expected.services.count)
        for (a, b) in zip(found.services, db.expected.services) {
            #expect(a == b, "service \(b.uuid) at 0x\(hex(b.startHandle, 4))")
        }
        #expect(found == db.expected)
        #expect(client.mtu == 517)
        #expect(server.mtu == 517)
        #expect(client.database == found)
        // Names for the CLI.
        #expect(found.service(uuid: BluetoothUUID(0x1809))?.name == "Health Thermometer")
        let ht = try #require(found.characteristic(uuid: BluetoothUUID(0x2A21)))
        #expect(ht.properties.names == ["read", "write", "indicate"])
        #expect(ht.descriptors.map(\.uuid) == [BluetoothUUID(0x2902), BluetoothUUID(0x2906)])
        // Included services: Battery (16-bit) and the secondary 128-bit service (read back).
        #expect(found.service(uuid: BluetoothUUID(0x1809))?.includedServices.map(\.uuid) == [BluetoothUUID(0x180F)])
        let secondary = try #require(found.service(uuid: TestDatabase.secondaryService))
        #expect(!secondary.isPrimary)
        #expect(secondary.characteristics.map(\.uuid) == [BluetoothUUID(0xFFE1)])
        // Service Changed indications were enabled.
        let sc = try #require(found.characteristic(uuid: GATTAttributeType.serviceChanged))
        #expect(server.writes(to: try #require(sc.cccdHandle)) == [[0x02, 0x00]])
    }

    @Test("GATT/CL/GAD/BV-01-C (part): Discovery round trips at ATT_MTU 23 and 517") func discoveryRoundTripsAtMTU23And517() async throws {
        let (_, small, db) = makeClient(mtu: 23)
        let a = try await small.discoverAll()
        let (_, large, _) = makeClient(mtu: 517)
        let b = try await large.discoverAll()
        #expect(a == db.expected)
        #expect(b == db.expected)
        #expect(small.mtu == 23)
        // MTU 23 (no exchange): services 4, includes 4, characteristics 8, descriptors 6,
        // Service Changed CCCD 1.
        #expect(small.roundTrips == 23)
        // MTU 517: Exchange MTU 1; services 3 (16-bit, 128-bit, end); includes 4 (two entry
        // sizes, a Read for the 128-bit UUID, end); characteristics 4 (16-bit, 128-bit,
        // 16-bit, end); descriptors 2 (merged spans); Service Changed CCCD 1.
        #expect(large.roundTrips == 15)
    }

    @Test("GATT/CL/GAD/BV-01-C … BV-04-C, BV-06-C: Each discovery procedure on its own") func individualDiscoveryProcedures() async throws {
        let (server, client, db) = makeClient(mtu: 23)
        let services = try await client.discoverPrimaryServices()
        #expect(services.map(\.uuid) == db.expected.services.filter(\.isPrimary).map(\.uuid))
        let byUUID = try await client.discoverPrimaryServices(uuid: BluetoothUUID(0x180F))
        #expect(byUUID.map(\.startHandle) == [0x0040])
        let vendor = try await client.discoverPrimaryServices(uuid: TestDatabase.vendorService)
        #expect(vendor.count == 1)
        let expectedHT = try #require(db.expected.service(uuid: BluetoothUUID(0x1809)))
        let ht = try #require(services.first { $0.uuid == BluetoothUUID(0x1809) })
        #expect(try await client.discoverIncludedServices(of: ht) == expectedHT.includedServices)
        let chars = try await client.discoverCharacteristics(of: ht)
        #expect(chars.map { GATTCharacteristic(declarationHandle: $0.declarationHandle, valueHandle: $0.valueHandle, endHandle: $0.endHandle, uuid: $0.uuid, properties: $0.properties) }
            == expectedHT.characteristics.map { GATTCharacteristic(declarationHandle: $0.declarationHandle, valueHandle: $0.valueHandle, endHandle: $0.endHandle, uuid: $0.uuid, properties: $0.properties) })
        for (c, e) in zip(chars, expectedHT.characteristics) {
            #expect(try await client.discoverDescriptors(of: c) == e.descriptors)
        }
        #expect(server.requests(.exchangeMTURequest) == 0)
    }

    @Test("GATT/CL/GAR/BV-04-C, GAW/BV-03-C, GAW/BV-05-C: Read Long and Write Long at ATT_MTU 23 and 517", arguments: [UInt16(23), 517])
    func longReadAndLongWrite(mtu: UInt16) async throws {
        let (server, client, db) = makeClient(mtu: mtu)
        let long = try #require(db.expected.characteristic(uuid: TestDatabase.longValueUUID))
        #expect(try await client.read(handle: long.valueHandle) == TestDatabase.longValue)
        let blobs = server.requests(.readBlobRequest)
        #expect(blobs == (600 + Int(mtu) - 2) / (Int(mtu) - 1) - 1 + (600 % (Int(mtu) - 1) == 0 ? 1 : 0))

        let writable = try #require(db.expected.characteristic(uuid: TestDatabase.writableUUID))
        let value = (0 ..< 700).map { UInt8(truncatingIfNeeded: $0 * 13) }
        try await client.write(handle: writable.valueHandle, value: value)
        #expect(server.value(writable.valueHandle) == value)
        let parts = (700 + Int(mtu) - 6) / (Int(mtu) - 5)
        #expect(server.requests(.prepareWriteRequest) == parts)
        #expect(server.requests(.executeWriteRequest) == 1)
        #expect(try await client.read(handle: writable.valueHandle) == value)

        // A short write is a plain Write Request.
        try await client.write(handle: writable.valueHandle, value: [1, 2, 3])
        #expect(server.value(writable.valueHandle) == [1, 2, 3])
        #expect(server.requests(.prepareWriteRequest) == parts)
    }

    @Test("GATT/CL/GAW/BV-06-C (part): Long writes do not interleave") func longWritesDoNotInterleave() async throws {
        let (server, client, db) = makeClient(mtu: 23)
        let w = try #require(db.expected.characteristic(uuid: TestDatabase.writableUUID)).valueHandle
        let interval = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A21))).valueHandle
        let a = [UInt8](repeating: 0xAA, count: 100)
        let b = [UInt8](repeating: 0xBB, count: 100)
        async let one: Void = client.write(handle: w, value: a)
        async let two: Void = client.reliableWrite([ATTHandleValue(handle: w, value: b), ATTHandleValue(handle: interval, value: le(90))])
        _ = try await (one, two)
        // Between the first Prepare Write and its Execute Write, no other Prepare Write
        // sequence started: prepares of one value are contiguous, each followed by an execute.
        let pdus = server.receivedPDUs.filter { $0[0] == 0x16 || $0[0] == 0x18 }
        var sequences: [[UInt8]] = []
        var current: [UInt8] = []
        for p in pdus {
            if p[0] == 0x18 {
                sequences.append(current)
                current = []
            } else {
                current.append(p[5])
            }
        }
        #expect(sequences.count == 2)
        for s in sequences {
            // Each sequence is all-AA or all-BB (plus the 2-byte interval write).
            #expect(Set(s.filter { $0 == 0xAA || $0 == 0xBB }).count == 1)
        }
        #expect(server.value(interval) == le(90))
    }

    @Test("GATT/CL/GAW/BV-01-C, GAR/BV-03-C, GAR/BV-05-C, GAR/BI-02-C: Write Without Response, Read Using UUID, Read Multiple, Read Not Permitted") func writeWithoutResponseAndReadsByUUID() async throws {
        let (server, client, db) = makeClient(mtu: 23)
        let w = try #require(db.expected.characteristic(uuid: TestDatabase.writableUUID)).valueHandle
        try await client.writeWithoutResponse(handle: w, value: [9, 8, 7])
        // No response: a round trip afterwards proves the server has it.
        let values = try await client.read(uuid: BluetoothUUID(0x2A29))
        #expect(values.map(\.value) == [Array("Bumble".utf8)])
        #expect(server.value(w) == [9, 8, 7])
        #expect(server.requests(.writeCommand) == 1)
        await #expect(throws: GATTError.self) {
            try await client.writeWithoutResponse(handle: w, value: [UInt8](repeating: 0, count: 21))
        }
        let multi = try await client.readMultiple(handles: [
            try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1D))).valueHandle,
            try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19))).valueHandle,
        ])
        #expect(multi == [0x02, 87])
        let unreadable = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C))).valueHandle
        do {
            _ = try await client.read(handle: unreadable)
            Issue.record("read of a non-readable value succeeded")
        } catch {
            #expect(error.attErrorCode == .readNotPermitted)
            #expect(error.description.contains("Read Not Permitted"))
        }
    }

    @Test("GATT/CL/GAN/BV-01-C: Notifications in order; two subscribers share one CCCD write") func notificationsInOrderAndTwoSubscribersShareOneCCCDWrite() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        let battery = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19)))
        let cccd = try #require(battery.cccdHandle)
        do {
            let s1 = try await client.subscribe(characteristic: battery)
            let s2 = try await client.subscribe(characteristic: battery)
            #expect(server.writes(to: cccd) == [[0x01, 0x00]])
            for v in UInt8(1) ... 5 { server.notify(battery.valueHandle, [v]) }
            var i1 = s1.makeAsyncIterator()
            var i2 = s2.makeAsyncIterator()
            for v in UInt8(1) ... 5 {
                #expect(try await i1.next()?.value == [v])
                #expect(try await i2.next()?.value == [v])
            }
            do {
                // A third subscriber that ends early: no CCCD write either way.
                let s3 = try await client.subscribe(characteristic: battery)
                _ = s3
            }
            _ = try await client.read(handle: battery.valueHandle)
            #expect(server.writes(to: cccd) == [[0x01, 0x00]])
        }
        // Both streams are gone: one write of 0.
        _ = try await client.read(handle: battery.valueHandle)
        #expect(server.writes(to: cccd) == [[0x01, 0x00], [0x00, 0x00]])
        // A notification nobody wants is counted, not kept.
        server.notify(battery.valueHandle, [1])
        _ = try await client.read(handle: battery.valueHandle)
        #expect(client.unhandledNotifications == 1)
    }

    @Test("Several characteristics on one stream: values in the order sent, each CCCD written once and cleared")
    func oneStreamForSeveralCharacteristicsKeepsTheirOrder() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        let battery = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19)))
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        do {
            let stream = try await client.subscribe([(battery, indicate: false), (tm, indicate: true)])
            #expect(server.writes(to: try #require(battery.cccdHandle)) == [[0x01, 0x00]])
            #expect(server.writes(to: try #require(tm.cccdHandle)) == [[0x02, 0x00]])
            // Notifications, then an indication, then more: what separate streams could reorder.
            server.notify(battery.valueHandle, [1])
            server.notify(battery.valueHandle, [2])
            server.indicate(tm.valueHandle, [9])
            server.notify(battery.valueHandle, [3])
            var it = stream.makeAsyncIterator()
            var got: [(UInt16, [UInt8], Bool)] = []
            for _ in 0 ..< 4 {
                let v = try #require(try await it.next())
                got.append((v.handle, v.value, v.isIndication))
            }
            #expect(got.map(\.0) == [battery.valueHandle, battery.valueHandle, tm.valueHandle, battery.valueHandle])
            #expect(got.map(\.1) == [[1], [2], [9], [3]])
            #expect(got.map(\.2) == [false, false, true, false])
            #expect(server.confirmations == 1)
            // Unsubscribing one characteristic leaves the stream with the other: its indications
            // are still taken (and confirmed), the first's CCCD is cleared.
            try await client.unsubscribe(characteristic: battery)
            server.indicate(tm.valueHandle, [8])
            #expect(try await it.next()?.value == [8])
            #expect(server.confirmations == 2)
            #expect(server.writes(to: try #require(battery.cccdHandle)) == [[0x01, 0x00], [0x00, 0x00]])
            // The same characteristic twice on one stream is refused, and what was written is cleared.
            await #expect(throws: GATTError.self) { _ = try await client.subscribe([(battery, indicate: false), (battery, indicate: false)]) }
        }
        _ = try await client.read(handle: battery.valueHandle)
        let batteryCCCD = try #require(battery.cccdHandle)
        #expect(server.writes(to: batteryCCCD).last == [0x00, 0x00], "\(server.writes(to: batteryCCCD))")
        #expect(server.writes(to: try #require(tm.cccdHandle)) == [[0x02, 0x00], [0x00, 0x00]])
        // One that cannot indicate fails the whole subscription; the first CCCD is cleared again.
        await #expect(throws: GATTError.self) { _ = try await client.subscribe([(tm, indicate: true), (battery, indicate: true)]) }
        _ = try await client.read(handle: battery.valueHandle)
        #expect(server.writes(to: try #require(tm.cccdHandle)).suffix(2) == [[0x02, 0x00], [0x00, 0x00]])
    }

    @Test("A subscription ended by its owner: what it holds still comes (indications confirmed as taken), then it ends; others go on")
    func endingOneSubscriptionKeepsWhatItHolds() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        let cccd = try #require(tm.cccdHandle)
        do {
            let mine = try await client.subscription(to: tm, indicate: true)
            let other = try await client.subscribe(characteristic: tm, indicate: true)
            server.indicate(tm.valueHandle, [1])
            _ = try await client.read(handle: 1)  // the indication is in both buffers
            #expect(server.confirmations == 0, "confirmed when both have taken it")
            var otherValues = other.makeAsyncIterator()
            #expect(try await otherValues.next()?.value == [1])
            // Ended while another stream wants the values: no CCCD write, at once.
            try await mine.end()
            #expect(server.writes(to: cccd) == [[0x02, 0x00]])
            server.indicate(tm.valueHandle, [2])
            #expect(try await otherValues.next()?.value == [2], "the other stream goes on")
            var it = mine.makeAsyncIterator()
            #expect(try await it.next()?.value == [1], "held before the end: still handed out")
            #expect(try await it.next() == nil, "then the end; [2] came after it")
            _ = try await client.read(handle: 1)
            #expect(server.confirmations == 2)
        }
        // The last one wanting them: its end waits for the CCCD write of 0.
        _ = try await client.read(handle: 1)
        let last = try await client.subscription(to: tm, indicate: true)
        server.indicate(tm.valueHandle, [3])
        _ = try await client.read(handle: 1)
        try await last.end()
        #expect(server.writes(to: cccd).last == [0x00, 0x00])
        var lastValues = last.makeAsyncIterator()
        #expect(try await lastValues.next()?.value == [3])
        #expect(try await lastValues.next() == nil)
    }

    @Test("Indications before anyone subscribed (a bonded device sending at once): confirmed, kept for the first subscription that asks")
    func earlyIndicationsWaitForTheFirstSubscription() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        let battery = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19)))
        server.indicate(tm.valueHandle, [1])
        server.indicate(tm.valueHandle, [2])
        server.notify(battery.valueHandle, [9])
        _ = try await client.read(handle: 1)
        #expect(server.confirmations == 2, "confirmed as they came: the device goes on")
        #expect(client.unhandledNotifications == 3)
        // A plain stream (a live view, a control point) does not take them.
        do {
            let live = try await client.subscribe(characteristic: tm, indicate: true)
            server.indicate(tm.valueHandle, [3])
            var it = live.makeAsyncIterator()
            #expect(try await it.next()?.value == [3])
        }
        _ = try await client.read(handle: 1)  // the live stream is gone; the CCCD cleared
        // Cleared by us: the early ones were dropped with it. Early again, then a
        // subscription that takes them: first, each once, before what comes after.
        server.indicate(tm.valueHandle, [4])
        server.indicate(tm.valueHandle, [5])
        _ = try await client.read(handle: 1)
        let sub = try await client.subscription(to: tm, indicate: true)
        server.indicate(tm.valueHandle, [6])
        var it = sub.makeAsyncIterator()
        var got: [[UInt8]] = []
        for _ in 0 ..< 3 { got.append(try #require(try await it.next()).value) }
        #expect(got == [[4], [5], [6]])
        _ = try await client.read(handle: 1)
        #expect(server.confirmations == 6)
        // A second subscription gets no repeat.
        let second = try await client.subscription(to: tm, indicate: true)
        server.indicate(tm.valueHandle, [7])
        var sit = second.makeAsyncIterator()
        #expect(try await sit.next()?.value == [7])
        try await sub.end()
        try await second.end()
    }

    @Test("Early indications from a hostile server: only for indicating characteristics, under one byte cap, the rest counted")
    func earlyIndicationsAreBounded() async throws {
        // On main 64 values were kept for any handle a peer named: up to 65535 × 64 × (MTU−3)
        // bytes per link.
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        let battery = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19)))
        // Handles with no characteristic, a notify-only value, a declaration: none kept.
        for handle: UInt16 in [0x0F00, 0x7777, 0xFFFF, battery.valueHandle, tm.valueHandle &- 1] {
            server.indicate(handle, [1, 2, 3])
        }
        _ = try await client.read(handle: 1)
        #expect(client.droppedEarlyIndications == 5)
        let kept = client.state.withLock { $0.earlyIndications.cost }
        #expect(kept == 0)
        // Large values on the one indicating characteristic: the newest 64, and never past
        // the per-link byte cap.
        let big = [UInt8](repeating: 0xAB, count: 1500)
        for _ in 0 ..< 100 { server.indicate(tm.valueHandle, big) }
        _ = try await client.read(handle: 1)
        let cost = client.state.withLock { $0.earlyIndications.cost }
        let each = big.count + EarlyIndications.entryCost
        #expect(cost <= EarlyIndications.costLimit && cost > 0 && cost % each == 0)
        #expect(client.droppedEarlyIndications == 5 + 100 - cost / each)
        #expect(server.confirmations == 105, "every indication confirmed all the same")
        let sub = try await client.subscription(to: tm, indicate: true)
        var it = sub.makeAsyncIterator()
        for _ in 0 ..< cost / each { #expect(try await it.next()?.value == big) }
        #expect(client.state.withLock { $0.earlyIndications.cost } == 0)
        try await sub.end()
    }

    @Test("Early indications before the database is known: kept, then pruned to the indicating characteristics")
    func earlyIndicationsPrunedOnDiscovery() async throws {
        let (server, client, db) = makeClient()
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        server.indicate(tm.valueHandle, [1])
        server.indicate(0x0F00, [2])
        _ = try await client.read(handle: 1)
        let each = 1 + EarlyIndications.entryCost
        #expect(client.state.withLock { $0.earlyIndications.cost } == 2 * each)
        _ = try await client.discoverAll()
        #expect(client.state.withLock { $0.earlyIndications.cost } == each)
        #expect(client.droppedEarlyIndications == 1)
        let sub = try await client.subscription(to: tm, indicate: true)
        var it = sub.makeAsyncIterator()
        #expect(try await it.next()?.value == [1])
        try await sub.end()
    }

    @Test("Empty early indications on thousands of handles before discovery: each one costs, the total stays bounded")
    func emptyEarlyIndicationsOnManyHandlesAreBounded() async throws {
        // Counting bytes only, empty values were free: 65535 handles × 64 each were kept.
        let (server, client, _) = makeClient()
        for handle in UInt16(1) ... 5000 { server.indicate(handle, []) }
        _ = try await client.read(handle: 1)
        let limit = EarlyIndications.costLimit / EarlyIndications.entryCost
        #expect(client.state.withLock { $0.earlyIndications.cost } == limit * EarlyIndications.entryCost)
        #expect(client.droppedEarlyIndications == 5000 - limit)
        #expect(server.confirmations == 5000)
    }

    @Test("Values nobody subscribed to go to the unsubscribed-values taker (a proxy's client wrote the CCCD), indications confirmed")
    func unsubscribedValuesGoToTheTaker() async throws {
        let db = TestDatabase.make()
        let server = FakeATTServer(attributes: db.attributes, maximumMTU: 517)
        let taken = Mutex<[GATTValue]>([])
        let client = GATTClient(bearer: server, options: .init(unsubscribedValues: { v in taken.withLock { $0.append(v) } }))
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        server.notify(0x0F00, [1])
        server.indicate(tm.valueHandle, [2, 3])
        _ = try await client.read(handle: 1)
        #expect(taken.withLock { $0 } == [GATTValue(handle: 0x0F00, value: [1], isIndication: false),
                                           GATTValue(handle: tm.valueHandle, value: [2, 3], isIndication: true)])
        #expect(server.confirmations == 1)
        #expect(client.unhandledNotifications == 0 && client.state.withLock { $0.earlyIndications.cost } == 0, "not kept as well")
    }

    @Test("Ending a subscription: a value the device sends before it has the CCCD write still comes")
    func valuesBeforeTheClearStillCome() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        let sub = try await client.subscription(to: tm, indicate: true)
        // The indication is on its way when the end starts: queued ahead of the write's answer.
        server.indicate(tm.valueHandle, [1])
        try await sub.end()
        var it = sub.makeAsyncIterator()
        #expect(try await it.next()?.value == [1])
        #expect(try await it.next() == nil)
        #expect(server.writes(to: try #require(tm.cccdHandle)) == [[0x02, 0x00], [0x00, 0x00]])
    }

    @Test func cancellingTheConsumingTaskUnsubscribes() async throws {
        let (server, client, db) = makeClient()
        let battery = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19)))
        let cccd = try #require(battery.cccdHandle)
        let stream = try await client.subscribe(characteristic: battery)
        let consumer = Task {
            var n = 0
            for try await _ in stream { n += 1 }
            return n
        }
        server.notify(battery.valueHandle, [1])
        _ = try await client.read(handle: battery.valueHandle)
        consumer.cancel()
        let taken = try await consumer.value
        #expect(taken <= 1)
        _ = try await client.read(handle: battery.valueHandle)
        #expect(server.writes(to: cccd) == [[0x01, 0x00], [0x00, 0x00]])
    }

    @Test("GATT/CL/GAI/BV-01-C: An indication is confirmed once the consumer took it") func indicationConfirmedOnlyAfterTheConsumerTakesIt() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.discoverAll()
        let tm = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A1C)))
        let stream = try await client.subscribe(characteristic: tm, indicate: true)
        #expect(server.writes(to: try #require(tm.cccdHandle)) == [[0x02, 0x00]])
        server.indicate(tm.valueHandle, [0x00, 0x6E, 0x01, 0x00, 0xFF])
        let name = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A00))).valueHandle
        _ = try await client.read(handle: name) // the indication arrived before this response
        #expect(server.confirmations == 0)
        var it = stream.makeAsyncIterator()
        let v = try #require(try await it.next())
        #expect(v.isIndication)
        #expect(v.value == [0x00, 0x6E, 0x01, 0x00, 0xFF])
        #expect(server.confirmations == 1)
        // Notify to an indicate-only subscription is refused up front.
        await #expect(throws: GATTError.self) { _ = try await client.subscribe(characteristic: tm, indicate: false) }
    }

    @Test func slowConsumerDropsOldestNotificationsCountedButNeverIndications() async throws {
        let (server, client, db) = makeClient(buffer: 4)
        _ = try await client.discoverAll()
        let interval = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A21)))
        let battery = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19)))
        let notes = try await client.subscribe(characteristic: battery)
        let inds = try await client.subscribe(characteristic: interval, indicate: true)
        server.indicate(interval.valueHandle, [1])
        for v in UInt8(1) ... 10 { server.notify(battery.valueHandle, [v]) }
        _ = try await client.read(handle: battery.valueHandle)
        #expect(client.droppedNotifications == 6)
        var it = notes.makeAsyncIterator()
        let first = try #require(try await it.next())
        #expect(first.value == [7])
        #expect(first.droppedBefore == 6)
        #expect(try await it.next()?.droppedBefore == 0)
        #expect(server.confirmations == 0)
        var ii = inds.makeAsyncIterator()
        #expect(try await ii.next()?.value == [1])
        #expect(server.confirmations == 1)
    }

    @Test("GATT/CL/GAT/BV-01-C: A server that does not answer: the bearer ends, later calls fail") func timeoutKillsTheBearerAndLaterCallsFail() async throws {
        let (server, client, db) = makeClient(timeout: .milliseconds(100))
        _ = try await client.exchangeMTU()
        server.setFault(.neverAnswer)
        let h = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A00))).valueHandle
        let clock = ContinuousClock()
        let start = clock.now
        do {
            _ = try await client.read(handle: h)
            Issue.record("read succeeded")
        } catch {
            guard case .transactionTimeout(let op, let timeout) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(op == .readRequest)
            #expect(timeout == .milliseconds(100))
            #expect(error.description.contains("timeout"))
        }
        #expect(clock.now - start >= .milliseconds(100))
        #expect(clock.now - start < .seconds(5))
        server.setFault(.none)
        let sentBefore = server.receivedPDUs.count
        do {
            _ = try await client.read(handle: h)
            Issue.record("later read succeeded")
        } catch {
            guard case .transactionTimeout = error else {
                Issue.record("unexpected \(error)")
                return
            }
        }
        #expect(server.receivedPDUs.count == sentBefore) // dead: nothing more is sent
        #expect(client.failure != nil)
    }

    @Test func malformedResponseFailsTheRequestAndTheNextWorks() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.exchangeMTU()
        server.setFault(.malformNext)
        do {
            _ = try await client.discoverPrimaryServices()
            Issue.record("malformed response accepted")
        } catch {
            guard case .malformedResponse(let op, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(op == .readByGroupTypeRequest)
        }
        let services = try await client.discoverPrimaryServices()
        #expect(services.count == db.expected.services.filter(\.isPrimary).count)
        #expect(client.failure == nil)
    }

    @Test func closeMidDiscoveryFailsPendingCallsWithTheReason() async throws {
        let (server, client, db) = makeClient()
        _ = try await client.exchangeMTU()
        let battery = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A19)))
        let stream = try await client.subscribe(characteristic: battery)
        server.setFault(.closeAfter(2))
        do {
            _ = try await client.discoverAll()
            Issue.record("discovery succeeded")
        } catch {
            #expect(error == .bearerClosed(FakeATTServer.peerTerminated))
            #expect(error.description.contains("Remote User Terminated Connection"))
        }
        var it = stream.makeAsyncIterator()
        do {
            _ = try await it.next()
            Issue.record("stream went on")
        } catch {
            #expect(error as? GATTError == .bearerClosed(FakeATTServer.peerTerminated))
        }
        await #expect(throws: GATTError.bearerClosed(FakeATTServer.peerTerminated)) {
            _ = try await client.read(handle: battery.valueHandle)
        }
    }

    @Test("GATT/CL/GAS/BV-01-C: Service Changed: the changed range is discovered again") func serviceChangedTriggersRediscovery() async throws {
        var db = TestDatabase.make()
        let (server, client, _) = makeClient(db: db)
        let before = try await client.discoverAll()
        let sc = try #require(before.characteristic(uuid: GATTAttributeType.serviceChanged))
        // The server adds Heart Rate at 0x0080.
        var b = FakeDatabaseBuilder(startHandle: 0x0080)
        b.service(BluetoothUUID(0x180D))
        b.characteristic(BluetoothUUID(0x2A37), .notify, readable: false)
        b.cccd()
        let (added, addedDB) = b.build()
        db.attributes += added
        server.replaceAttributes(db.attributes)
        server.indicate(sc.valueHandle, le(0x0080) + le(0xFFFF))
        var changes = client.databaseChanged.makeAsyncIterator()
        let change = try #require(await changes.next())
        #expect(change.range == 0x0080 ... 0xFFFF)
        #expect(change.error == nil)
        let after = try #require(change.database)
        #expect(after.services.count == before.services.count + 1)
        #expect(after.service(uuid: BluetoothUUID(0x180D)) == addedDB.services.first)
        #expect(client.database == after)
        #expect(server.confirmations == 1)
    }
}
