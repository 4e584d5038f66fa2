import BluetoothWire

/// A table of values by LE address: the scanner's devices. Values live in a dense array;
/// an open-addressing index (linear probing, at most half full, backward-shift deletion)
/// maps an address to its place. The hash is a 64-bit mix of ``LEAddress/key`` with a
/// per-table random seed, so advertisers cannot choose addresses that collide (they choose
/// their addresses freely).
///
/// The values are also kept in recency order, a doubly linked list through their places:
/// ``touch(_:)`` makes one the most recent, ``oldest`` is the least recently touched or
/// inserted. Forgetting the least recently seen device (table full, or silent too long)
/// then costs one removal, not a pass over the table.
struct AddressTable<Value>: Sendable where Value: Sendable {
    private(set) var values: [Value] = []
    private(set) var addresses: [LEAddress] = []
    /// Dense position + 1 of the value whose address hashes here (or after), 0 empty.
    private var slots: [Int32]
    private let seed: UInt64
    /// Each value's neighbours in recency order (dense positions, -1 at either end).
    private var links: [Link] = []
    private var oldestIndex: Int32 = -1
    private var newestIndex: Int32 = -1

    struct Link: Sendable {
        var older: Int32
        var newer: Int32
    }

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

    /// The least recently touched (or inserted) value's place.
    var oldest: Int? { oldestIndex < 0 ? nil : Int(oldestIndex) }

    /// The places from the most to the least recently touched, by the other links.
    var recencyOrderFromNewest: [Int] { walk(from: newestIndex) { $0.older } }

    /// The places from the least to the most recently touched (for tests and checks).
    var recencyOrder: [Int] { walk(from: oldestIndex) { $0.newer } }

    private func walk(from start: Int32, _ next: (Link) -> Int32) -> [Int] {
        var order: [Int] = []
        var i = start
        while i >= 0 {
            order.append(Int(i))
            i = next(links[Int(i)])
        }
        return order
    }

    /// Makes the value at `i` the most recent (every report of a known device: four link
    /// writes through one buffer, no uniqueness check per write).
    mutating func touch(_ i: Int) {
        let p = Int32(truncatingIfNeeded: i)
        let newest = newestIndex
        guard p != newest, links.indices.contains(i) else { return }
        var oldest = oldestIndex
        links.withUnsafeMutableBufferPointer { l in
            let o = l[i]
            // Not the newest: it has a newer neighbour, and there is a newest.
            assert(o.newer >= 0 && newest >= 0, "recency list broken")
            if o.older >= 0 { l[Int(o.older)].newer = o.newer } else { oldest = o.newer }
            l[Int(o.newer)].older = o.older
            l[Int(newest)].newer = p
            l[i] = Link(older: newest, newer: -1)
        }
        oldestIndex = oldest
        newestIndex = p
    }

    private mutating func unlink(_ p: Int32) {
        let l = links[Int(p)]
        if l.older >= 0 { links[Int(l.older)].newer = l.newer } else { oldestIndex = l.newer }
        if l.newer >= 0 { links[Int(l.newer)].older = l.older } else { newestIndex = l.older }
    }

    private mutating func linkNewest(_ p: Int32) {
        links[Int(p)] = Link(older: newestIndex, newer: -1)
        if newestIndex >= 0 { links[Int(newestIndex)].newer = p } else { oldestIndex = p }
        newestIndex = p
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

    /// Adds `value` for `address` (replacing the value it has, if any), as the most recent;
    /// returns its index.
    @discardableResult
    mutating func insert(_ value: consuming Value, for address: LEAddress) -> Int {
        if (values.count &+ 1) &* 2 > slots.count { resize(slots.count &* 2) }
        let (s, found) = probe(address)
        if found {
            let i = Int(slots[s]) &- 1
            values[i] = value
            touch(i)
            return i
        }
        values.append(value)
        addresses.append(address)
        links.append(Link(older: -1, newer: -1))
        slots[s] = Int32(truncatingIfNeeded: values.count)
        linkNewest(Int32(truncatingIfNeeded: values.count &- 1))
        return values.count &- 1
    }

    /// Adds `value` for `address` in the place of the least recently touched value, which
    /// goes (a full table making room: no value moves, one slot freed and one taken);
    /// returns its index. With `address` in the table already, or the table empty, the
    /// oldest is removed and `value` inserted as ``insert(_:for:)`` would.
    @discardableResult
    mutating func replaceOldest(with value: consuming Value, for address: LEAddress) -> Int {
        guard let i = oldest else { return insert(value, for: address) }
        let (old, found) = probe(addresses[i])
        if found { deleteSlot(old) }
        unlink(Int32(truncatingIfNeeded: i))
        // After the deletion (its backward shift may have moved the free slot).
        let (s, present) = probe(address)
        if present {
            // Not how the scanner calls it: the oldest goes as remove(at:) takes it, and
            // `value` replaces the one `address` has.
            fillHole(at: i)
            let j = Int(slots[s]) &- 1
            values[j] = value
            touch(j)
            return j
        }
        values[i] = value
        addresses[i] = address
        slots[s] = Int32(truncatingIfNeeded: i &+ 1)
        linkNewest(Int32(truncatingIfNeeded: i))
        return i
    }

    /// Removes the value at `i`; the last value moves into its place (its slot and its
    /// recency neighbours repointed).
    mutating func remove(at i: Int) {
        let (s, found) = probe(addresses[i])
        guard found else { return }
        deleteSlot(s)
        unlink(Int32(truncatingIfNeeded: i))
        fillHole(at: i)
    }

    /// After the value at `i` lost its slot and its links: the last value moves into its
    /// place, moved, not swapped (its slot and its neighbours repointed).
    private mutating func fillHole(at i: Int) {
        let last = values.count &- 1
        if i != last {
            let (ls, lfound) = probe(addresses[last])
            if lfound { slots[ls] = Int32(truncatingIfNeeded: i &+ 1) }
            let moved = links[last]
            let p = Int32(truncatingIfNeeded: i)
            if moved.older >= 0 { links[Int(moved.older)].newer = p } else { oldestIndex = p }
            if moved.newer >= 0 { links[Int(moved.newer)].older = p } else { newestIndex = p }
            links[i] = moved
            values[i] = values.removeLast()
            addresses[i] = addresses.removeLast()
            links.removeLast()
            return
        }
        values.removeLast()
        addresses.removeLast()
        links.removeLast()
    }

    /// Removes `address` if it is there.
    mutating func remove(_ address: LEAddress) {
        if let i = index(of: address) { remove(at: i) }
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
