import BluetoothWire

/// The addresses a replay has shown, for "new once per capture": an open-addressing set of
/// ``LEAddress/key`` words with a multiplicative hash. A capture of a crowd inserts once per
/// line, so Swift's `Set` (SipHash per insert and per rehash) was a tenth of the replay.
struct AddressSet: ~Copyable {
    /// Keys with the top bit set (a key never has it: 48 address bits + 8 type bits), 0 empty.
    private var slots: UnsafeMutablePointer<UInt64>
    private var capacity: Int
    private(set) var count = 0

    init() {
        capacity = 1024
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: 0, count: capacity)
    }

    deinit { slots.deallocate() }

    /// Adds `address`; true when it was not there yet.
    mutating func insert(_ address: LEAddress) -> Bool {
        let stored = address.key | 1 << 63
        var i = Self.slot(stored, capacity)
        while true {
            let s = slots[i]
            if s == stored { return false }
            if s == 0 { break }
            i = (i &+ 1) & (capacity &- 1)
        }
        slots[i] = stored
        count &+= 1
        // At most half full: probes stay short.
        if count &* 2 > capacity { grow() }
        return true
    }

    /// Fibonacci hashing: the top bits of the key times 2^64/φ.
    @inline(__always)
    private static func slot(_ key: UInt64, _ capacity: Int) -> Int {
        Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> UInt64(64 - capacity.trailingZeroBitCount))
    }

    private mutating func grow() {
        let old = slots, oldCapacity = capacity
        capacity = oldCapacity * 2
        slots = .allocate(capacity: capacity)
        slots.initialize(repeating: 0, count: capacity)
        for j in 0 ..< oldCapacity where old[j] != 0 {
            var i = Self.slot(old[j], capacity)
            while slots[i] != 0 { i = (i &+ 1) & (capacity &- 1) }
            slots[i] = old[j]
        }
        old.deallocate()
    }
}
