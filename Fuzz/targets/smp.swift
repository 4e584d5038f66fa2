// Fuzz target: SMP PDU parsing and exact re-encoding.
// Built together with the BluetoothWire sources as one module by Fuzz/run.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    let pdu: SMPPDU
    do { pdu = try SMPPDU(parsing: buf) } catch { return 0 }
    let fields = pdu.fields
    if case .pairingRequest(let p) = pdu { precondition((7 ... 16).contains(p.maximumEncryptionKeySize)) }
    if case .pairingResponse(let p) = pdu { precondition((7 ... 16).contains(p.maximumEncryptionKeySize)) }
    let again: [UInt8]
    do { again = try pdu.encoded() } catch { preconditionFailure("re-encoding failed: \(error)") }
    precondition(again.count == pdu.encodedLength)
    precondition(again == Array(buf), "re-encoded bytes differ")
    again.withUnsafeBytes { b in
        do {
            let back = try SMPPDU(parsing: b)
            precondition(back.fields == fields)
        } catch {
            preconditionFailure("re-encoded PDU does not parse: \(error)")
        }
    }
    return 0
}
