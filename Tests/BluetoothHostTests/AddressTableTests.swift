import FakeController
import Testing
@testable import BluetoothHost
import BluetoothWire

/// The scanner's address table against a Dictionary and a list in recency order: random
/// inserts, touches, lookups, removals by address, by position and of the oldest, the
/// oldest replaced; every address found where it is, none where it is not, and the
/// recency order the model's.
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

    func check(_ table: AddressTable<Int>, _ model: [LEAddress: Int], _ order: [LEAddress], _ pool: [LEAddress]) {
        #expect(table.count == model.count)
        #expect(table.recencyOrder.map { table.addresses[$0] } == order)
        #expect(table.recencyOrderFromNewest.map { table.addresses[$0] } == order.reversed())
        #expect(table.oldest.map { table.addresses[$0] } == order.first)
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
        // Least recently inserted or touched first.
        var order: [LEAddress] = []
        func forget(_ a: LEAddress) {
            model[a] = nil
            order.removeAll { $0 == a }
        }
        func makeNewest(_ a: LEAddress) {
            order.removeAll { $0 == a }
            order.append(a)
        }
        for step in 0 ..< 20_000 {
            let a = pool[Int(rng.next() % UInt64(pool.count))]
            switch rng.next() % 10 {
            case 0 ..< 4:
                table.insert(step, for: a)
                model[a] = step
                makeNewest(a)
            case 4:
                // A full table making room; with `a` there already, as remove and insert.
                if let first = order.first { forget(first) }
                table.replaceOldest(with: step, for: a)
                model[a] = step
                makeNewest(a)
            case 5 ..< 7:
                table.remove(a)
                forget(a)
            case 7:
                if !table.isEmpty {
                    let i = Int(rng.next() % UInt64(table.count))
                    forget(table.addresses[i])
                    table.remove(at: i)
                }
            case 8:
                if let i = table.index(of: a) {
                    table[index: i] += 1
                    model[a]? += 1
                    if step % 2 == 0 {
                        table.touch(i)
                        makeNewest(a)
                    }
                }
            default:
                // The oldest go, as a full table or a sweep forgets them.
                for _ in 0 ..< Int(rng.next() % 4) {
                    guard let i = table.oldest else { break }
                    #expect(table.addresses[i] == order.first)
                    forget(table.addresses[i])
                    table.remove(at: i)
                }
            }
            if step % 97 == 0 { check(table, model, order, pool) }
        }
        check(table, model, order, pool)
    }
}
