// fuzz-modules: BluetoothWire BluetoothCrypto BluetoothTransport BluetoothSecurity BluetoothProfiles BluetoothHost BluetoothGATT BluetoothLE HCIGATTFormat HCIGATTGateway
// Fuzz target: the gateway's spool opening whatever a crash, a full disk or a stray write
// left on disk. The input becomes a segment file (its name, the first id, picked by the
// first byte) and, after a 0xFF 0xFE marker, the head file; the spool must open without
// trapping, read back contiguous ids from its head, take new records after them, and
// reopen to the same state.
import Glibc

let root: String = {
    var template = Array("/tmp/hcigatt-fuzz-spool-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}()

func write(_ path: String, _ bytes: UnsafeRawBufferPointer) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0)
    _ = Glibc.write(fd, bytes.baseAddress, bytes.count)
    close(fd)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let all = UnsafeRawBufferPointer(start: data, count: size)
    let dir = root + "/s"
    if let d = opendir(dir) {
        while let e = readdir(d) {
            let name = withUnsafeBytes(of: e.pointee.d_name) { String(decoding: $0.prefix(while: { $0 != 0 }), as: UTF8.self) }
            if name != "." && name != ".." { unlink(dir + "/" + name) }
        }
        closedir(d)
    }
    mkdir(dir, 0o700)
    var split = all.count
    for i in 0 ..< max(0, all.count - 1) where all[i] == 0xFF && all[i + 1] == 0xFE { split = i; break }
    // The first byte picks the segment's name (its first id): 0 for a record's A5, else small or absurd.
    let first: UInt64 = switch all.first.map({ ($0 ^ 0xA5) % 4 }) {
    case 1?: 3
    case 2?: UInt64.max
    case 3?: 1 << 60
    default: 0
    }
    let hex = String(first, radix: 16)
    write(dir + "/" + String(repeating: "0", count: 16 - hex.count) + hex + ".seg", UnsafeRawBufferPointer(rebasing: all[..<split]))
    if split + 2 <= all.count { write(dir + "/head", UnsafeRawBufferPointer(rebasing: all[(split + 2)...])) }
    let state: (UInt64, UInt64)
    do {
        let s = try Spool(directory: dir, maxBytes: 16 * 1024)
        precondition(s.head <= s.nextID)
        let records = try s.read(from: 0, maxCount: 100_000)
        precondition(records.map(\.id) == Array(s.head ..< s.head + UInt64(records.count)), "ids not contiguous from the head")
        precondition(s.head + UInt64(records.count) == s.nextID, "records missing before the end")
        let id = try s.append(topic: [0x74], payload: [1, 2, 3]).id
        precondition(id == s.nextID - 1)
        try s.sync()
        state = (s.head, s.nextID)
    } catch {
        return 0  // an error is fine (said, not trapped)
    }
    do {
        let again = try Spool(directory: dir, maxBytes: 16 * 1024)
        precondition(again.nextID == state.1, "reopening lost records: \(again.nextID) vs \(state.1)")
        precondition(again.head <= state.0 || again.head == again.nextID)
    } catch {
        preconditionFailure("a spool it wrote itself does not open: \(error)")
    }
    return 0
}
