// Fuzz target: ATT PDU parsing, list iteration, re-encoding and the response builders.
// Built together with the BluetoothWire sources as one module by Fuzz/run.

/// Encodes into a fresh array (encoding failures are bugs for parsed input).
private func bytesOf(_ v: some WireEncodable) -> [UInt8] {
    do { return try v.encoded() } catch { preconditionFailure("re-encoding a parsed PDU failed: \(error)") }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    // The inlined fast paths must agree with the general parser.
    let general = try? ATTPDU.parseGeneral(buf)
    let pdu: ATTPDU
    do { pdu = try ATTPDU(parsing: buf) } catch {
        precondition(general == nil, "fast path rejected what the general parser accepts")
        return 0
    }
    let fields = pdu.fields // walks every list
    precondition(general?.fields == fields, "fast path and general parser disagree")
    let big = 1 << 20
    switch pdu {
    case .readByTypeResponse(let r):
        var b = ATTReadByTypeResponseBuilder(mtu: big)
        var n = 0
        for e in r {
            precondition(e.value.count == r.valueLength)
            precondition(b.append(handle: e.handle, value: e.value))
            n += 1
        }
        precondition(n > 0 && n == r.underestimatedCount)
        precondition(bytesOf(b) == Array(buf))
    case .readByGroupTypeResponse(let r):
        var b = ATTReadByGroupTypeResponseBuilder(mtu: big)
        for e in r { precondition(b.append(handle: e.handle, endGroupHandle: e.endGroupHandle, value: e.value)) }
        precondition(!b.isEmpty && bytesOf(b) == Array(buf))
    case .findByTypeValueResponse(let r):
        var b = ATTFindByTypeValueResponseBuilder(mtu: big)
        for e in r { precondition(b.append(foundHandle: e.foundHandle, groupEndHandle: e.groupEndHandle)) }
        precondition(!b.isEmpty && bytesOf(b) == Array(buf))
    case .findInformationResponse(let r):
        var b = ATTFindInformationResponseBuilder(mtu: big)
        var all = true
        for e in r { all = b.append(handle: e.handle, type: e.type) && all }
        // 128-bit aliases of 16-bit UUIDs switch format, so compare only the 16-bit form.
        if r.format == .uuid16 { precondition(all && bytesOf(b) == Array(buf)) }
    case .multipleHandleValueNotification(let r):
        var b = ATTMultipleHandleValueNotificationBuilder(mtu: big)
        for e in r { precondition(b.append(handle: e.handle, value: e.value)) }
        precondition(!b.isEmpty && bytesOf(b) == Array(buf))
    case .readMultipleVariableResponse(let r):
        var total = 0
        var truncated = 0
        for e in r {
            total += 2 + e.value.count
            if e.isTruncated { truncated += 1 }
        }
        precondition(total == r.lengthValueTupleList.count && truncated <= 1)
    case .signedWriteCommand(let s):
        precondition(s.signature.count == ATT.signatureLength)
    default:
        break
    }
    // Re-encode the parsed view and parse again: same fields. Bytes are identical except
    // for Read By (Group) Type requests whose 128-bit UUID has a 16-bit alias.
    let again = bytesOf(pdu)
    precondition(again.count == pdu.encodedLength)
    again.withUnsafeBytes { b in
        do {
            let back = try ATTPDU(parsing: b)
            precondition(back.fields == fields, "fields differ after re-encoding")
            precondition(back.opcode == pdu.opcode)
        } catch {
            preconditionFailure("re-encoded PDU does not parse: \(error)")
        }
    }
    switch pdu {
    case .readByTypeRequest, .readByGroupTypeRequest: break
    default: precondition(again == Array(buf), "re-encoded bytes differ")
    }
    return 0
}
