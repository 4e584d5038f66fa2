// Fuzz target: `hcigatt replay` of a hostile capture, sans I/O. The input is a series of
// records (direction, packet type, length, bytes) replayed through CaptureReplay in every
// mode: the scan lines, and `--packets` with the ATT handle map learning from discovery
// responses and annotating later PDUs. Invariants: nothing traps; JSON lines are valid
// UTF-8 with no raw control characters; ATT packets and advertising report events written
// straight are byte for byte what the dissector's field tree and the events' descriptions
// give. To give the map something to learn, most ACL records are ATT PDUs wrapped in
// well-formed ACL and L2CAP headers of connection 0x0040 (the fuzzer varies the PDUs); the
// others are raw ACL bytes (bad lengths, fragments, other channels). Some events are LE
// Advertising Reports around the fuzzer's bytes (Num_Reports onwards). Scan mode also
// runs in lockstep with the lines deferred and formatted apart (as `hcigatt replay` formats
// them on a second thread): the same bytes and counts.
// fuzz-modules: BluetoothWire BluetoothTransport BluetoothCrypto BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    var packets: [(received: Bool, bytes: [UInt8])] = []
    var offset = 0
    while offset + 3 <= size {
        let control = input[offset], kind = input[offset + 1], length = min(Int(input[offset + 2]), size - offset - 3)
        let body = Array(input[(offset + 3) ..< (offset + 3 + length)])
        offset += 3 + length
        // An event (most of a capture), an ATT PDU on an ACL link, a command, or raw ACL.
        let type: UInt8 = switch kind & 0x03 { case 1, 3: 0x02; case 2: 0x01; default: 0x04 }
        if kind & 0x03 == 1 {
            // ACL, first fragment (or, now and then, boundary 0b11), connection 0x0040, L2CAP
            // on the ATT channel.
            let l2cap = [UInt8(body.count & 0xFF), UInt8(body.count >> 8), 0x04, 0x00] + body
            let flags: UInt8 = control & 0x06 == 0x06 ? 0x30 : 0x20
            packets.append((control & 1 != 0, [0x02, 0x40, flags, UInt8(l2cap.count & 0xFF), UInt8(l2cap.count >> 8)] + l2cap))
        } else if kind & 0x07 == 0x04, body.count < 254 {
            // An HCI_LE_Advertising_Report around the bytes: reports the fuzzer shapes.
            packets.append((control & 1 != 0, [0x04, 0x3E, UInt8(body.count + 1), 0x02] + body))
        } else {
            packets.append((control & 1 != 0, [type] + body))
        }
    }
    for (json, packetMode) in [(true, true), (false, true), (true, false), (false, false)] {
        var replay = CaptureReplay(configuration: ScanConfiguration(), json: json, packets: packetMode, bufferCapacity: 4096)
        // Packet mode: the same records through the dissector's tree only, in lockstep; the
        // direct ATT path must write the very same bytes.
        var reference = CaptureReplay(configuration: ScanConfiguration(), json: json, packets: packetMode, bufferCapacity: 4096)
        reference.directATTPackets = false
        reference.directAdvertisingPackets = false
        var deferred = CaptureReplay(configuration: ScanConfiguration(), json: json, packets: packetMode, bufferCapacity: 64,
                                     defersLines: true)
        var formatter = deferred.lineFormatter()
        var apart = FieldWriter(format: json ? .json : .text, out: OutputBuffer(capacity: 4096))
        var lines: [ScanLine] = []
        /// Formats the deferred lines and checks them against what the replay wrote itself.
        func compareDeferred() {
            guard !packetMode else { return }
            deferred.takeLines(&lines)
            for l in lines { formatter.write(l.device, isNew: l.isNew, into: &apart) }
            let same = replay.writer.out.withBytes { a in apart.out.withBytes { b in a.elementsEqual(b) } }
            if !same || deferred.lines != replay.lines || deferred.devices != replay.devices {
                preconditionFailure("deferred lines differ: \(apart.out.string) vs \(replay.writer.out.string)")
            }
            apart.out.removeAll()
        }
        for (i, p) in packets.enumerated() {
            p.bytes.withUnsafeBytes { bytes in
                let flags = BTSnoopRecordFlags(received: p.received, commandOrEvent: bytes.first != 0x02)
                let record = BTSnoopRecord(originalLength: UInt32(bytes.count), flags: flags, cumulativeDrops: 0,
                                           timestamp: 0x00E0_3AB4_4A67_6000 + Int64(i) * 1000, data: bytes, offset: 0)
                replay.record(record)
                if packetMode { reference.record(record) } else { deferred.record(record) }
            }
            compareDeferred()
            if json { replay.writer.out.withBytes { if let p = OutputBuffer.jsonOutputViolation($0, lines: true) { preconditionFailure(p) } } }
            if packetMode {
                let same = replay.writer.out.withBytes { a in reference.writer.out.withBytes { b in a.elementsEqual(b) } }
                if !same { preconditionFailure("a packet written straight differs from the dissector's: \(replay.writer.out.string) vs \(reference.writer.out.string)") }
                reference.writer.out.removeAll()
            }
            replay.writer.out.removeAll()
        }
        replay.finish()
        if !packetMode { deferred.finish() }
        if json { replay.writer.out.withBytes { if let p = OutputBuffer.jsonOutputViolation($0, lines: true) { preconditionFailure(p) } } }
        compareDeferred()
    }
    return 0
}
