import BluetoothWire
#if canImport(Glibc)
import Glibc
#endif

// hcigatt-bench: micro-benchmarks of the parsing hot path.
//   swift run -c release hcigatt-bench [--json FILE] [--filter SUBSTRING] [--check]
//   hcigatt-bench --list | --run CASE N      (for Benchmarks/instructions)
//   hcigatt-bench --shapes | --write-shape SHAPE FILE [N] | --write-bonds DIR   (for Benchmarks/replay-vs-btmon)
// --check exits 1 when any case allocates on the heap (allocation counts are exact and
// deterministic, so the test suite runs it; timing targets are reported, not enforced).

var jsonPath: String?
var filter: String?
var check = false
var quick = false
var argIndex = 1
let argv = CommandLine.arguments
while argIndex < argv.count {
    switch argv[argIndex] {
    case "--json" where argIndex + 1 < argv.count: argIndex += 1; jsonPath = argv[argIndex]
    case "--filter" where argIndex + 1 < argv.count: argIndex += 1; filter = argv[argIndex]
    case "--check": check = true
    case "--quick": quick = true
    case "--write-capture" where argIndex + 1 < argv.count:
        // The 10 000-report capture of the replay cases (or N reports, all distinct devices),
        // for timing `hcigatt replay` and `btmon -r` on it.
        argIndex += 1
        var reports = ScanPipeline.reportCount
        if argIndex + 1 < argv.count, let n = Int(argv[argIndex + 1]), n > 0 { reports = n }
        let bytes = ScanPipeline.capture(devices: reports, reports: reports)
        guard let f = fopen(argv[argIndex], "w") else { print("cannot write \(argv[argIndex])"); exit(1) }
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
        exit(0)
    case "--shapes":
        // The traffic shapes of Benchmarks/replay-vs-btmon: name, tab, what it is.
        for shape in CaptureShape.allCases { print("\(shape.rawValue)\t\(shape.summary)") }
        exit(0)
    case "--write-shape" where argIndex + 2 < argv.count:
        // --write-shape SHAPE FILE [N]: a capture of that shape with about N reports.
        guard let shape = CaptureShape(rawValue: argv[argIndex + 1]) else {
            print("hcigatt-bench: unknown shape '\(argv[argIndex + 1])'; --shapes lists them")
            exit(2)
        }
        var reports = ScanPipeline.reportCount
        if argIndex + 3 < argv.count {
            guard let n = Int(argv[argIndex + 3]), n > 0 else { print("hcigatt-bench: N must be a positive count"); exit(2) }
            reports = n
        }
        let bytes = shape.capture(reports: reports)
        guard let f = fopen(argv[argIndex + 2], "w") else { print("cannot write \(argv[argIndex + 2])"); exit(1) }
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, f) }
        fclose(f)
        exit(0)
    case "--write-bonds" where argIndex + 1 < argv.count:
        // The bonds of the bonded shape (its bonded phones' IRKs), for `replay --bond-dir`.
        do { try CaptureShape.writeBonds(argv[argIndex + 1]) } catch { print("hcigatt-bench: \(error)"); exit(1) }
        exit(0)
    case "--list":
        // Name, tab, items per operation.
        for c in allCases() { print("\(c.name)\t\(max(c.itemsPerOp, 1))") }
        exit(0)
    case "--run" where argIndex + 2 < argv.count:
        // One case, exactly N operations, nothing else: Benchmarks/instructions runs this
        // under valgrind twice (N and 2N) and takes the difference, so setup cancels out.
        let name = argv[argIndex + 1]
        guard let c = allCases(only: name).first(where: { $0.name == name }), let n = Int(argv[argIndex + 2]), n > 0 else {
            print("hcigatt-bench: --run takes a case name from --list and a positive count")
            exit(2)
        }
        checksumSink &+= c.run(n)
        // The same output whatever N is, so it does not differ between the two counted runs.
        print(checksumSink == 0x5EED_5EED_5EED_5EED ? "" : "done")
        exit(0)
    default:
        print("usage: hcigatt-bench [--json FILE] [--filter SUBSTRING] [--check] [--quick] [--write-capture FILE] [--shapes] [--write-shape SHAPE FILE [N]] [--write-bonds DIR] [--list] [--run CASE N]")
        exit(2)
    }
    argIndex += 1
}

var harness = Harness()
if quick {
    harness.repetitions = 3
    harness.targetRepetitionNanos = 2_000_000
}
let selected = allCases().filter { filter == nil || $0.name.contains(filter!) }
var results: [Measurement] = []
for c in selected {
    results.append(harness.measure(c))
}
print(tableReport(results), terminator: "")
if let jsonPath {
    let text = jsonReport(results)
    guard let f = fopen(jsonPath, "w") else {
        print("hcigatt-bench: cannot write \(jsonPath)")
        exit(1)
    }
    fputs(text, f)
    fclose(f)
}
if checksumSink == 0x5EED_5EED_5EED_5EED { print("") }
if check {
    // The counter must see the sanity case's allocation, or a broken counter would pass everything.
    if let sanity = results.first(where: { $0.name.hasPrefix("sanity:") }), sanity.allocationsPerOp < 1 {
        print("FAIL: the allocation counter saw no allocation in '\(sanity.name)'; counting is broken")
        exit(1)
    }
    let allocating = results.filter { $0.allocationsPerOp > 0 && !$0.allowsAllocations && !$0.name.hasPrefix("sanity:") }
    if !allocating.isEmpty {
        print("FAIL: heap allocations on the hot path in: \(allocating.map(\.name).joined(separator: ", "))")
        exit(1)
    }
    // Lines of output: at most one allocation each (a new device's data kept by the table).
    let overBudget = results.filter { m in m.maxAllocationsPerItem.map { m.allocationsPerOp > $0 } ?? false }
    if !overBudget.isEmpty {
        print("FAIL: more allocations per line than allowed in: \(overBudget.map { "\($0.name) (\($0.allocationsPerOp))" }.joined(separator: ", "))")
        exit(1)
    }
    print("ok: 0 heap allocations per operation in every parsing case; at most 1 per replayed line")
}
