import BluetoothWire

/// Benchmark inputs, exactly as given in the issue so results compare across stacks.
enum Inputs {
    static let uuid128: [UInt8] = [0xFB, 0x34, 0x9B, 0x5F, 0x80, 0x00, 0x00, 0x80, 0x00, 0x10, 0x00, 0x00, 0x0D, 0x18, 0x00, 0x00]
}

func allCases() -> [BenchmarkCase] {
    [
        BenchmarkCase(name: "uuid128 parse", targetNanos: nil) { [input = RotatingInput(Inputs.uuid128)] n in
            input.run(n) { buf in
                do throws(WireError) { return try BluetoothUUID(wire: buf).high } catch { return 0 }
            }
        },
        BenchmarkCase(name: "sanity: 1 array alloc per op", targetNanos: nil) { n in
            var sum: UInt64 = 0
            for i in 0 ..< n {
                let a = [UInt8](repeating: UInt8(truncatingIfNeeded: i), count: 8 + i & 7)
                sum &+= UInt64(a.count)
            }
            return sum
        },
    ]
}
