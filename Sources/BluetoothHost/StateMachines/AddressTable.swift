import BluetoothWire

/// A table of values by LE address: the scanner's devices. Values live in a dense array
/// (iterated in passes over the whole table without hashing); an open-addressing index
/// (linear probing, at most half full, backward-shift deletion) maps an address to its
/// place. The hash is a 64-bit mix of ``LEAddress/key`` with a per-table random seed, so
/// advertisers cannot choose addresses that collide (they choose their addresses freely).
struct AddressTable<Value>: Sendable where Value: Sendable {
    private(set) var values: [Value] = []
    private(set) var addresses: [LEAddress] = []
    /// Dense position + 1 of the value whose address hashes here (or after), 0 empty.
    private var slots: [Int32]
    private let seed: UInt64

    init(seed: UInt64 = UInt64.random(in: .min ... .max)) {
        self.seed = seed
        slots = [Int32](repeating: 0, count: 16)
    }

    var count: Int { values.count }
    var isEmpty: Bool { values.isEmpty }

    @inline(__always)
    private func home(_ address: LEAddress) -> Int {
        // murmur3's 64-bit finalizer.
        var x = address.key ^ seed
        x ^= x >> 33
        x &*= 0xFF51_AFD7_ED55_8CCD
        x ^= x >> 33
        x &*= 0xC4CE_B9FE_1A85_EC53
        x ^= x >> 33
        return Int(truncatingIfNeeded: x) & (slots.count &- 1)
    }

    /// The slot holding `address`, or the empty slot where it would go.
    @inline(never)  // one copy for its five callers (the static binary's size)
    private func probe(_ address: LEAddress) -> (slot: Int, found: Bool) {
        let mask = slots.count &- 1
        var s = home(address)
        while true {
            let p = Int(slots[s])
            if p == 0 { return (s, false) }
            if addresses[p &- 1] == address { return (s, true) }
            s = (s &+ 1) & mask
        }
    }

    /// Where `address` is in ``values``.
    func index(of address: LEAddress) -> Int? {
        let (s, found) = probe(address)
        return found ? Int(slots[s]) &- 1 : nil
    }

    /// The value of `address`, in place.
    subscript(index i: Int) -> Value {
        get { values[i] }
        _modify { yield &values[i] }
    }

    /// Adds `value` for `address` (replacing the value it has, if any); returns its index.
    @discardableResult
    mutating func insert(_ value: consuming Value, for address: LEAddress) -> Int {
        if (values.count &+ 1) &* 2 > slots.count { resize(slots.count &* 2) }
        let (s, found) = probe(address)
        if found {
            let i = Int(slots[s]) &- 1
            values[i] = value
            return i
        }
        values.append(value)
        addresses.append(address)
        slots[s] = Int32(truncatingIfNeeded: values.count)
        return values.count &- 1
    }

    /// Removes the value at `i`; the last value moves into its place.
    mutating func remove(at i: Int) {
        let (s, found) = probe(addresses[i])
        guard found else { return }
        deleteSlot(s)
        let last = values.count &- 1
        if i != last {
            // The last value moves to i: repoint its slot.
            let (ls, lfound) = probe(addresses[last])
            if lfound { slots[ls] = Int32(truncatingIfNeeded: i &+ 1) }
            values.swapAt(i, last)
            addresses.swapAt(i, last)
        }
        values.removeLast()
        addresses.removeLast()
    }

    /// Removes `address` if it is there.
    mutating func remove(_ address: LEAddress) {
        if let i = index(of: address) { remove(at: i) }
    }

    /// Removes every value `drop` says so of, given its index and value (one pass, then
    /// the index is rebuilt). The indices are those before the call: a value is looked
    /// at before any other moves into its place.
    mutating func removeAll(where drop: (Int, Value) -> Bool) {
        var kept = 0
        for i in 0 ..< values.count where !drop(i, values[i]) {
            if kept != i {
                values.swapAt(kept, i)
                addresses.swapAt(kept, i)
            }
            kept &+= 1
        }
        guard kept < values.count else { return }
        values.removeLast(values.count &- kept)
        addresses.removeLast(addresses.count &- kept)
        resize(slots.count)
    }

    /// Removes the values whose index is flagged (`flagged` has one entry per value): each
    /// hole is filled by the last value kept, so at most one move per value removed (a
    /// compaction in order would move nearly every value kept), then the index is rebuilt.
    mutating func removeAll(flagged: [Bool]) {
        var end = values.count  // values[end...] are to go
        var i = 0
        while i < end {
            if flagged[i] {
                end &-= 1
                while end > i && flagged[end] { end &-= 1 }
                if end > i {
                    values.swapAt(i, end)
                    addresses.swapAt(i, end)
                }
            }
            i &+= 1
        }
        guard end < values.count else { return }
        values.removeLast(values.count &- end)
        addresses.removeLast(addresses.count &- end)
        resize(slots.count)
    }

    /// Backward-shift deletion: later entries of the probe run move up so that no lookup
    /// stops early at the hole (no tombstones).
    private mutating func deleteSlot(_ s: Int) {
        let mask = slots.count &- 1
        var hole = s
        var j = (s &+ 1) & mask
        while slots[j] != 0 {
            let k = home(addresses[Int(slots[j]) &- 1])
            // Move j into the hole unless its home lies cyclically in (hole, j].
            let homeAfterHole = hole <= j ? (k > hole && k <= j) : (k > hole || k <= j)
            if !homeAfterHole {
                slots[hole] = slots[j]
                hole = j
            }
            j = (j &+ 1) & mask
        }
        slots[hole] = 0
    }

    private mutating func resize(_ capacity: Int) {
        slots = [Int32](repeating: 0, count: capacity)
        let mask = capacity &- 1
        for i in 0 ..< addresses.count {
            var s = home(addresses[i])
            while slots[s] != 0 { s = (s &+ 1) & mask }
            slots[s] = Int32(truncatingIfNeeded: i &+ 1)
        }
    }
}
