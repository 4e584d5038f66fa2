import BluetoothLE
import Glibc

/// `--transport SPEC` and `--name VALUE`-style options, the rest positional.
public struct ExampleArguments: Sendable {
    public var options: [String: String] = [:]
    public var positional: [String] = []

    public init(_ arguments: [String] = CommandLine.arguments) {
        var i = 1
        while i < arguments.count {
            let a = arguments[i]
            if a.hasPrefix("--"), i + 1 < arguments.count {
                options[String(a.dropFirst(2))] = arguments[i + 1]
                i += 2
            } else {
                positional.append(a)
                i += 1
            }
        }
    }

    /// Transport (and bond directory, when given) for the managers.
    public var bluetooth: BluetoothOptions {
        BluetoothOptions(transport: options["transport"], bondDirectory: options["bond-dir"])
    }

    public func int(_ name: String, default value: Int) -> Int { options[name].flatMap(Int.init) ?? value }
}

/// Writes a line to stdout at once (the tests read it through a pipe). write(2), not
/// print: stdio would buffer it, and fflush(NULL) waits for the stdin lock that a thread
/// blocked reading stdin holds.
public func say(_ text: String) {
    var line = text + "\n"
    line.withUTF8 { b in
        guard let base = b.baseAddress else { return }
        var done = 0
        while done < b.count {
            let n = write(1, base + done, b.count - done)
            if n <= 0 { break }
            done += n
        }
    }
}

/// Prints to stderr and exits with 1.
public func fail(_ error: any Error) -> Never {
    var line = "error: \(error)\n"
    _ = line.withUTF8 { write(2, $0.baseAddress, $0.count) }
    exit(1)
}

/// Lines of stdin, read on a thread of their own so the async code is never blocked.
public func standardInputLines() -> AsyncStream<String> {
    let (stream, continuation) = AsyncStream<String>.makeStream()
    let box = Unmanaged.passRetained(LineReader(continuation)).toOpaque()
    var thread = pthread_t()
    pthread_create(&thread, nil, { raw in
        guard let raw else { return nil }
        let reader = Unmanaged<LineReader>.fromOpaque(raw).takeRetainedValue()
        // read(2) on descriptor 0, not readLine: no stdio lock held while blocked.
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            for b in buffer[0 ..< n] {
                if b == 0x0A {
                    reader.continuation.yield(String(decoding: pending, as: UTF8.self))
                    pending.removeAll()
                } else {
                    pending.append(b)
                }
            }
        }
        if !pending.isEmpty { reader.continuation.yield(String(decoding: pending, as: UTF8.self)) }
        reader.continuation.finish()
        return nil
    }, box)
    pthread_detach(thread)
    return stream
}

final class LineReader: @unchecked Sendable {
    let continuation: AsyncStream<String>.Continuation
    init(_ c: AsyncStream<String>.Continuation) { continuation = c }
}

/// The text of a small file (nil when it cannot be read).
public func readTextFile(_ path: String) -> String? {
    guard let f = fopen(path, "r") else { return nil }
    defer { fclose(f) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&buffer, 1, buffer.count, f)
        if n <= 0 { break }
        bytes += buffer[0 ..< n]
    }
    return String(decoding: bytes, as: UTF8.self).trimmingTrailingNewlines
}

/// Writes `text` to `path` (replacing it); false when it cannot.
@discardableResult
public func writeTextFile(_ path: String, _ text: String) -> Bool {
    guard let f = fopen(path, "w") else { return false }
    defer { fclose(f) }
    let bytes = Array(text.utf8)
    return fwrite(bytes, 1, bytes.count, f) == bytes.count
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = Substring(self)
        while s.last == "\n" || s.last == "\r" { s = s.dropLast() }
        return String(s)
    }
}
