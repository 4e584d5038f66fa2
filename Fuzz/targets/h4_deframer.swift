// Fuzz target: the incremental H4 deframer.
// Input layout: byte 0 → number of chunk-size bytes k (1...16), byte 1 → packet cap,
// bytes 2..<2+k → chunk sizes (cycled), the rest → the H4 stream.
// The stream fed in those chunks must give the same frames and the same error as the
// stream fed at once; every frame must re-parse with H4Frame.parse; errors are sticky.
// Built together with the BluetoothWire sources as one module by Fuzz/run.

struct FuzzFrame: Equatable {
    var type: UInt8
    var bytes: [UInt8]
}

func fuzzDrain(_ d: inout H4Deframer, into frames: inout [FuzzFrame]) -> WireError? {
    do throws(WireError) {
        while let f = try d.next() {
            frames.append(FuzzFrame(type: f.type.rawValue, bytes: Array(f.packet)))
            // A frame with its indicator is exactly one packet for the stateless parser.
            let whole = [f.type.rawValue] + Array(f.packet)
            let again = whole.withUnsafeBytes { b in Result { () throws(WireError) in try H4Frame.parse(b) } }
            guard case .success(let g) = again else { preconditionFailure("frame does not re-parse") }
            precondition(g.type == f.type && g.packet.count == f.packet.count)
        }
        return nil
    } catch {
        return error
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = UnsafeRawBufferPointer(start: data, count: size)
    guard input.count >= 3 else { return 0 }
    let k = Int(input[0] % 16) + 1
    let cap = 4 + Int(input[1]) * 8
    guard input.count >= 2 + k else { return 0 }
    let sizes = (0 ..< k).map { Int(input[2 + $0]) % 64 + 1 }
    let stream = UnsafeRawBufferPointer(rebasing: input[(2 + k)...])

    var whole = H4Deframer(maximumPacketLength: cap)
    var expected: [FuzzFrame] = []
    whole.append(stream)
    let expectedError = fuzzDrain(&whole, into: &expected)

    var chunked = H4Deframer(maximumPacketLength: cap, initialCapacity: 16)
    var got: [FuzzFrame] = []
    var gotError: WireError?
    var i = 0
    var s = 0
    while i < stream.count {
        let n = min(sizes[s % k], stream.count - i)
        s += 1
        chunked.append(UnsafeRawBufferPointer(rebasing: stream[i ..< i + n]))
        i += n
        if let e = fuzzDrain(&chunked, into: &got) {
            gotError = e
            break
        }
    }
    precondition(got == expected, "chunked frames differ")
    precondition(gotError == expectedError, "chunked error differs")
    if let e = gotError {
        // Sticky: later calls throw the same error, even with more input.
        chunked.append(stream)
        var more: [FuzzFrame] = []
        precondition(fuzzDrain(&chunked, into: &more) == e && more.isEmpty)
        chunked.reset()
        precondition(chunked.error == nil && chunked.bufferedByteCount == 0)
    } else {
        precondition(chunked.bufferedByteCount == whole.bufferedByteCount)
    }
    return 0
}
