import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

/// The scanner's address table against a Dictionary: random inserts, lookups, removals by
/// address and position, and sweeps; every address found where it is, none where it is not.
@Suite struct AddressTableTests {
    struct Rng: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    func check(_ table: AddressTable<Int>, _ model: [LEAddress: Int], _ pool: [LEAddress]) {
        #expect(table.count == model.count)
        for a in pool {
            let i = table.index(of: a)
            if let v = model[a] {
                guard let i else { Issue.record("\(a) lost"); return }
                #expect(table.values[i] == v && table.addresses[i] == a)
            } else if i != nil {
                Issue.record("\(a) found after removal")
            }
        }
    }

    @Test(arguments: [1, 2, 3, 0])
    func behavesLikeADictionary(seed: UInt64) {
        var rng = Rng(state: seed)
        // A small pool, so inserts, hits and removals mix; addresses close together (a crowd
        // of sequential addresses) and of both types.
        let pool = (0 ..< 300).map { i in
            LEAddress(BluetoothAddress(rawValue: 0xC000_0000_0000 | UInt64(i / 2)), type: i % 2 == 0 ? .public : .random)
        }
        var table = AddressTable<Int>(seed: seed)
        var model: [LEAddress: Int] = [:]
        for step in 0 ..< 20_000 {
            let a = pool[Int(rng.next() % UInt64(pool.count))]
            switch rng.next() % 10 {
            case 0 ..< 5:
                table.insert(step, for: a)
                model[a] = step
            case 5 ..< 7:
                table.remove(a)
                model[a] = nil
            case 7:
                if !table.isEmpty {
                    let i = Int(rng.next() % UInt64(table.count))
                    model[table.addresses[i]] = nil
                    table.remove(at: i)
                }
            case 8:
                if let i = table.index(of: a) { table[index: i] += 1; model[a]? += 1 }
            case 9 where step % 2 == 0:
                // By index: the index given is the value's place before the call.
                let addresses = table.addresses
                let dropped = Set(addresses.indices.filter { _ in rng.next() % 4 == 0 })
                if step % 4 == 0 {
                    table.removeAll { i, _ in dropped.contains(i) }
                } else {
                    table.removeAll(flagged: addresses.indices.map { dropped.contains($0) })
                }
                for i in dropped { model[addresses[i]] = nil }
            default:
                let cut = step - 500
                table.removeAll { _, v in v < cut }
                model = model.filter { $0.value >= cut }
            }
            if step % 97 == 0 { check(table, model, pool) }
        }
        check(table, model, pool)
    }
}
