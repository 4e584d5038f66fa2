// Fuzz target: L2CAP basic frames and LE signaling commands.
// Built together with the BluetoothWire sources as one module by Fuzz/run.

private func checkSignaling(_ buf: UnsafeRawBufferPointer) {
    let cmd: L2CAPSignalingCommand
    do { cmd = try L2CAPSignalingCommand(parsing: buf) } catch { return }
    let fields = cmd.fields
    let again: [UInt8]
    do { again = try cmd.encoded() } catch { preconditionFailure("re-encoding failed: \(error)") }
    precondition(again.count == cmd.encodedLength)
    // A reserved Command Reject reason drops its undefined data; everything else is exact.
    if case .commandReject(_, .reserved) = cmd {} else { precondition(again == Array(buf), "bytes differ") }
    again.withUnsafeBytes { b in
        do {
            let back = try L2CAPSignalingCommand(parsing: b)
            precondition(back.fields == fields)
            precondition(back.code == cmd.code && back.identifier == cmd.identifier)
        } catch {
            preconditionFailure("re-encoded command does not parse: \(error)")
        }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let buf = UnsafeRawBufferPointer(start: data, count: size)
    checkSignaling(buf)
    _ = L2CAPBasicFrame.payloadLength(ofHeader: buf)
    guard let frame = try? L2CAPBasicFrame(parsing: buf) else { return 0 }
    precondition(frame.payload.count + L2CAPBasicFrame.headerLength == size)
    _ = frame.fields
    let payload = Array(frame.payload)
    let again: [UInt8]
    do { again = try L2CAPFrame(channelID: frame.channelID, bytes: payload).encoded() } catch {
        preconditionFailure("frame re-encoding failed: \(error)")
    }
    precondition(again == Array(buf))
    if frame.channelID == .leSignaling { checkSignaling(frame.payload) }
    if frame.channelID == .att, let pdu = try? ATTPDU(parsing: frame.payload) { _ = pdu.fields }
    if frame.channelID == .smp, let pdu = try? SMPPDU(parsing: frame.payload) { _ = pdu.fields }
    return 0
}
