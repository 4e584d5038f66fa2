import BluetoothGATT

/// The tests look at each PDU the server writes as it comes: these hand the output of one
/// call to `sent` (only when there is one), on a stack buffer.
extension ATTServer {
    mutating func receive(from client: ATTServerClientID, pdu: UnsafeRawBufferPointer, now: UInt64,
                          _ sent: (UnsafeRawBufferPointer) -> Void) -> [ATTServerEvent] {
        ATTServerOutput.withOutput { o in
            let events = receive(from: client, pdu: pdu, now: now, into: &o)
            if !o.isEmpty { sent(o.pdu) }
            return events
        }
    }

    @discardableResult
    mutating func notify(_ client: ATTServerClientID, handle: UInt16, value: UnsafeRawBufferPointer,
                         _ sent: (UnsafeRawBufferPointer) -> Void) throws(ATTServerError) -> Bool {
        try ATTServerOutput.withOutput { (o) throws(ATTServerError) in
            let cut = try notify(client, handle: handle, value: value, into: &o)
            if !o.isEmpty { sent(o.pdu) }
            return cut
        }
    }

    @discardableResult
    mutating func notify(_ client: ATTServerClientID, handle: UInt16, value: [UInt8],
                         _ sent: (UnsafeRawBufferPointer) -> Void) throws(ATTServerError) -> Bool {
        var result: Result<Bool, ATTServerError> = .success(false)
        value.withUnsafeBytes { b in
            result = Result { () throws(ATTServerError) in try notify(client, handle: handle, value: b, sent) }
        }
        return try result.get()
    }

    @discardableResult
    mutating func indicate(_ client: ATTServerClientID, handle: UInt16, value: [UInt8], now: UInt64,
                           _ sent: (UnsafeRawBufferPointer) -> Void) throws(ATTServerError) -> Bool {
        try ATTServerOutput.withOutput { (o) throws(ATTServerError) in
            let cut = try indicate(client, handle: handle, value: value, now: now, into: &o)
            if !o.isEmpty { sent(o.pdu) }
            return cut
        }
    }

    mutating func serviceChangedIndication(to client: ATTServerClientID, range: ClosedRange<UInt16> = 0x0001 ... 0xFFFF,
                                           now: UInt64, _ sent: (UnsafeRawBufferPointer) -> Void) throws(ATTServerError) {
        try ATTServerOutput.withOutput { (o) throws(ATTServerError) in
            try serviceChangedIndication(to: client, range: range, now: now, into: &o)
            if !o.isEmpty { sent(o.pdu) }
        }
    }

    mutating func notifyMultiple(_ client: ATTServerClientID, _ values: [(handle: UInt16, value: [UInt8])],
                                 _ sent: (UnsafeRawBufferPointer) -> Void) throws(ATTServerError) -> Int {
        try ATTServerOutput.withOutput { (o) throws(ATTServerError) in
            let n = try notifyMultiple(client, values, into: &o)
            if !o.isEmpty { sent(o.pdu) }
            return n
        }
    }
}
