import BluetoothWire
import Testing
@testable import BluetoothGATT

/// The GATT client against the cases of GATT.TS (CL) not covered where the procedures are
/// tested one by one: writes that go wrong, reads of several variable-length values.
@Suite struct GATTClientPTSTests {
    @Test("GATT/CL/GAW/BI-32-C: a Prepare Write Response that does not echo the value: Execute Write cancels, the write fails")
    func aCorruptedPrepareWriteEchoCancelsTheQueue() async throws {
        let (server, client, db) = makeClient(mtu: 23)
        let w = try #require(db.expected.characteristic(uuid: TestDatabase.writableUUID)).valueHandle
        try await client.write(handle: w, value: [1, 2, 3])
        server.setFault(.corruptEcho)
        do {
            try await client.write(handle: w, value: [UInt8](repeating: 0x5A, count: 60))
            Issue.record("the long write succeeded")
        } catch {
            guard case .malformedResponse(let request, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(request == .prepareWriteRequest)
        }
        let executes = server.receivedPDUs.filter { $0.first == 0x18 }
        #expect(executes == [[0x18, 0x00]], "Execute Write with Flags 0x00 (cancel all), no write of the queue")
        #expect(server.requests(.prepareWriteRequest) == 1, "nothing more is prepared after the bad echo")
        #expect(server.value(w) == [1, 2, 3], "the value is as it was")
        // The bearer is alive: the next write works.
        server.setFault(.none)
        try await client.write(handle: w, value: [4])
        #expect(server.value(w) == [4])
    }

    @Test("GATT/CL/GAT/BV-02-C: a Write Request without response times out once: no retry, the bearer ends")
    func aWriteWithoutAnswerTimesOutAndIsNotRetried() async throws {
        let (server, client, db) = makeClient(timeout: .milliseconds(100))
        let w = try #require(db.expected.characteristic(uuid: TestDatabase.writableUUID)).valueHandle
        _ = try await client.exchangeMTU()
        server.setFault(.neverAnswer)
        do {
            try await client.write(handle: w, value: [9])
            Issue.record("the write succeeded")
        } catch {
            guard case .transactionTimeout(let op, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(op == .writeRequest)
        }
        #expect(server.requests(.writeRequest) == 1, "sent once")
        server.setFault(.none)
        await #expect(throws: GATTError.self) { try await client.write(handle: w, value: [9]) }
        #expect(server.requests(.writeRequest) == 1, "a bearer that timed out sends nothing more (Core Vol 3 Part F §3.3.3)")
    }

    @Test("GATT/CL/GAR/BV-08-C: Read Multiple Variable Length Characteristic Values")
    func readMultipleVariableLengthValues() async throws {
        let (server, client, db) = makeClient(mtu: 517)
        let name = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A00))).valueHandle
        let w = try #require(db.expected.characteristic(uuid: TestDatabase.writableUUID)).valueHandle
        try await client.write(handle: w, value: [7, 7])
        let values = try await client.readMultipleVariable(handles: [name, w])
        #expect(values == [server.value(name) ?? [], [7, 7]])
        #expect(server.receivedPDUs.last == [0x20] + le(name) + le(w))
        // One handle is not enough for the procedure.
        await #expect(throws: GATTError.self) { _ = try await client.readMultipleVariable(handles: [name]) }
    }

    @Test("GATT/CL/GAR/BV-08-C (cut at the MTU): the value the response had no room for ends short")
    func readMultipleVariableCutAtTheMTU() async throws {
        let (server, client, db) = makeClient(mtu: 23)
        let name = try #require(db.expected.characteristic(uuid: BluetoothUUID(0x2A00))).valueHandle
        let long = try #require(db.expected.characteristic(uuid: TestDatabase.longValueUUID)).valueHandle
        let values = try await client.readMultipleVariable(handles: [name, long])
        let nameValue = server.value(name) ?? []
        // 22 bytes after the opcode: the name's tuple, then what is left of the long one.
        #expect(values.first == nameValue)
        #expect(values.count == 2 && values[1] == Array(TestDatabase.longValue.prefix(22 - 2 - nameValue.count - 2)))
    }
}
