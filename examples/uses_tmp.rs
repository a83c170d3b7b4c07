use strands::gpu::layout::Kernel;
use strands::gpu::traffic::TrafficModel;
fn main() {
    let m = TrafficModel::from_shaders();
    for k in [Kernel::SubstepStartRod, Kernel::SubstepFinishRod] {
        println!("{}", k.entry_point());
        for u in m.uses(k) { println!("  {:14} R {:3} W {:3}", u.name, u.read, u.written); }
    }
}
