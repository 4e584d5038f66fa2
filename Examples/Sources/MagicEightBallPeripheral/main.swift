// The Magic 8-Ball SDK's peripheral: serve the 8-Ball service, advertise it, and answer
// each question a central writes with one of the twenty classic answers, notified to the
// central that asked. Runs until --questions N questions are answered (default: forever).
//
//   MagicEightBallPeripheral [--transport SPEC] [--name N] [--questions N]
import BluetoothLE
import ExampleSupport

let eightBall = BluetoothUUID("8BA11000-1D7E-4D2E-9F3A-0B8BA1100000")!
let questionUUID = BluetoothUUID("8BA11001-1D7E-4D2E-9F3A-0B8BA1100000")!
let answerUUID = BluetoothUUID("8BA11002-1D7E-4D2E-9F3A-0B8BA1100000")!

let answers = [
    "It is certain.", "It is decidedly so.", "Without a doubt.", "Yes definitely.", "You may rely on it.",
    "As I see it, yes.", "Most likely.", "Outlook good.", "Yes.", "Signs point to yes.",
    "Reply hazy, try again.", "Ask again later.", "Better not tell you now.", "Cannot predict now.",
    "Concentrate and ask again.", "Don't count on it.", "My reply is no.", "My sources say no.",
    "Outlook not so good.", "Very doubtful.",
]

let args = ExampleArguments()
let limit = args.int("questions", default: 0)
do {
    let service = GATTLocalService(uuid: eightBall, characteristics: [
        GATTLocalCharacteristic(uuid: questionUUID, properties: .writeWithoutResponse, descriptors: [.userDescription("Question")]),
        GATTLocalCharacteristic(uuid: answerUUID, properties: .notify, descriptors: [.userDescription("Answer")]),
    ])
    let manager = try await PeripheralManager(name: args.options["name"] ?? "8-Ball", services: [service], options: args.bluetooth)
    try await manager.startAdvertising()
    say("advertising as \"\(manager.name)\"")
    var answered = 0
    for await event in manager.events {
        switch event {
        case .connected(let central): say("connected: \(central)")
        case .disconnected(let central, let reason): say("disconnected: \(central) (\(reason))")
        case .wrote(let central, questionUUID, let value, _):
            let answer = answers.randomElement() ?? "Ask again later."
            say("question from \(central): \(String(decoding: value, as: UTF8.self))")
            let reached = try await manager.updateValue(Array(answer.utf8), for: answerUUID, onSubscribedCentrals: [central])
            say(reached.isEmpty ? "not subscribed to the answer; not answered" : "answer: \(answer)")
            answered += 1
        default: break
        }
        if limit > 0 && answered >= limit { break }
    }
    await manager.close()
    // The events end early only when the controller went away.
    if limit == 0 || answered < limit { throw BluetoothError(.unavailable, "the controller went away") }
} catch {
    fail(error)
}
