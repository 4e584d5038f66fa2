import Testing
@testable import BluetoothWire

@Suite struct AdvertisingBytesTests {
    /// Every length from empty to past the inline limit, each replaced by every other:
    /// the bytes read back, the equality with raw bytes and with other values, the hash.
    @Test func holdsEveryLengthAndReplacesAcrossTheInlineLimit() {
        let lengths = [0, 1, 7, 8, 9, 30, 31, 32, 33, 250, 1650]
        func bytes(_ n: Int, _ seed: UInt8) -> [UInt8] { (0 ..< n).map { UInt8(truncatingIfNeeded: $0 &* 7) &+ seed } }
        for n in lengths {
            let a = bytes(n, 1)
            let held = AdvertisingBytes(a)
            #expect(held.count == n && held.isEmpty == (n == 0))
            #expect(held.array == a)
            #expect((held.heap != nil) == (n > AdvertisingBytes.inlineCapacity), "inline up to 31 bytes, only then")
            #expect(a.withUnsafeBytes { held.equals($0) })
            for m in lengths {
                let b = bytes(m, n == m ? 2 : 1)  // same length: different bytes
                var replaced = held
                b.withUnsafeBytes { replaced.replace(with: $0) }
                #expect(replaced.array == b, "\(n) -> \(m)")
                #expect((replaced.heap != nil) == (m > AdvertisingBytes.inlineCapacity))
                #expect(replaced.heap == nil || replaced.inline == (0, 0, 0, 0), "no inline words left beside the array")
                #expect(b.withUnsafeBytes { replaced.equals($0) })
                #expect(replaced == AdvertisingBytes(b), "an inline tail left from the longer data would make these differ")
                #expect(replaced.hashValue == AdvertisingBytes(b).hashValue)
                #expect(b.withUnsafeBytes { held.equals($0) } == (a == b))
                #expect((held == replaced) == (a == b))
                #expect(held.array == a, "the copy it was replaced in is its own")
            }
        }
    }

    /// The count's byte is the one after the longest inline data; an empty buffer with no
    /// address (as a zero-length report gives) is held and compared like any other.
    @Test func layoutAndBuffersWithoutAnAddress() {
        #expect(AdvertisingBytes.inlineCapacity == MemoryLayout<(UInt64, UInt64, UInt64, UInt64)>.size - 1)
        #expect(AdvertisingBytes.countOffset == AdvertisingBytes.inlineCapacity)
        let none = UnsafeRawBufferPointer(start: nil, count: 0)
        var held = AdvertisingBytes(none)
        #expect(held.isEmpty && held.equals(none) && held == AdvertisingBytes())
        held = AdvertisingBytes([UInt8](repeating: 7, count: 40))
        #expect(!held.equals(none))
        held.replace(with: none)
        #expect(held.isEmpty && held.heap == nil && held == AdvertisingBytes())
        #expect(AdvertisingBytes([2, 1, 6]).debugDescription == "\"020106\"")
    }

    /// Data that differs only after its end or in its length is not equal.
    @Test func countsAreCompared() {
        let zeros = AdvertisingBytes([0, 0])
        #expect(zeros != AdvertisingBytes([0, 0, 0]))
        #expect(zeros != AdvertisingBytes())
        #expect(![UInt8]([0, 0, 0]).withUnsafeBytes { zeros.equals($0) })
        #expect([UInt8]().withUnsafeBytes { AdvertisingBytes().equals($0) })
    }
}
