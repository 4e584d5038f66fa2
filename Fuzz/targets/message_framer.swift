// Fuzz target: the chat's message framing (MessageFramer), driven by a peer: pieces of any
// size and content (no newline for long, CRs, invalid UTF-8). Invariants: nothing traps, no
// message holds a newline, what is held back stays bounded, a message cut back into pieces
// gives its bytes and newline again in pieces no larger than asked, and printable text has no
// control characters. The first byte sets the piece size.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let first = input.first else { return 0 }
    let pieceSize = Int(first) + 1
    var framer = MessageFramer()
    var messages: [String] = []
    var at = 1
    while at < input.count {
        let end = min(at + pieceSize, input.count)
        messages += framer.append(Array(input[at ..< end]))
        precondition(framer.pending.count < MessageFramer.limit, "held back beyond the limit")
        at = end
    }
    if let rest = framer.flush() { messages.append(rest) }
    precondition(framer.pending.isEmpty)
    for m in messages {
        precondition(!m.utf8.contains(0x0A), "a message with a newline")
        let pieces = MessageFramer.pieces(m, size: pieceSize)
        precondition(pieces.allSatisfy { $0.count <= pieceSize && !$0.isEmpty })
        precondition(pieces.flatMap { $0 } == Array(m.utf8) + [0x0A], "pieces do not give the message back")
        let shown = MessageFramer.printable(m)
        precondition(!shown.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\t") || (0x7F ... 0x9F).contains($0.value) })
    }
    return 0
}
