//! The SVG pictures parse as XML, draw one shape per allocation / op, and escape names.

use accel_sim::{
    Allocation, Arrival, Buffer, BufferKind, Hardware, Mapping, Op, Program, SimReport, Simulator,
};
use malloc_game::render::{memory_map_svg, timeline_svg, MapLegend};
use malloc_game::{GameOptions, GameSetup};
use std::sync::Arc;

const NASTY: &str = r#"w<&>"quote"'s"#;

/// x(input) -> op0 -> a -> op1 -> b -> op2 -> y(output); the weight NASTY is read by op0
/// and op2. Names carry every XML special character.
fn program() -> Program {
    let buf = |n: &str, s, k| Buffer {
        name: n.into(),
        size: s,
        kind: k,
    };
    let op = |n: &str, r: &[usize], w: &[usize]| Op {
        name: n.into(),
        kind: "k<&>".into(),
        flops: 1e6,
        reads: r.to_vec(),
        writes: w.to_vec(),
    };
    Program::new(
        "p&<q>",
        "",
        vec![
            buf("x", 1024, BufferKind::Input),
            buf(NASTY, 2048, BufferKind::Weight),
            buf("a & b", 1024, BufferKind::Activation),
            buf("b", 1024, BufferKind::Activation),
            buf("y", 1024, BufferKind::Output),
        ],
        vec![
            op("op0 <conv>", &[0, 1], &[2]),
            op("op1", &[2], &[3]),
            op("op2", &[3, 1], &[4]),
        ],
    )
    .unwrap()
}

fn hw() -> Hardware {
    Hardware::tpu_v4i_like().with_capacity(1, 4096).unwrap()
}

fn alloc(offset: u64, start: usize, end: usize, arrival: Arrival) -> Allocation {
    Allocation {
        level: 1,
        offset,
        start,
        end,
        arrival,
        eviction: None,
    }
}

/// Four allocations: two defined, one prefetch of the weight, one evicted output.
fn mapping(p: &Program) -> Mapping {
    let mut m = Mapping::all_slow(p);
    m.buffers[2].allocations = vec![alloc(0, 0, 1, Arrival::Defined)];
    m.buffers[3].allocations = vec![alloc(1024, 1, 2, Arrival::Defined)];
    m.buffers[1].allocations = vec![alloc(2048, 1, 2, Arrival::Prefetch)];
    let mut y = alloc(0, 2, 2, Arrival::Defined);
    y.eviction = Some(2);
    m.buffers[4].allocations = vec![y];
    m
}

fn legend(latency_s: Option<f64>) -> MapLegend {
    MapLegend {
        workload: "p&<q>".into(),
        hardware: "hw \"fast\"".into(),
        solver: "by <hand>".into(),
        latency_s,
    }
}

fn has_class(n: &roxmltree::Node, class: &str) -> bool {
    n.attribute("class")
        .is_some_and(|c| c.split_whitespace().any(|t| t == class))
}

fn count(doc: &roxmltree::Document, tag: &str, class: &str) -> usize {
    doc.descendants()
        .filter(|n| n.has_tag_name(tag) && has_class(n, class))
        .count()
}

fn title_of<'a>(n: roxmltree::Node<'a, 'a>) -> &'a str {
    n.children()
        .find(|c| c.has_tag_name("title"))
        .and_then(|t| t.text())
        .unwrap_or("")
}

fn fast_allocations(m: &Mapping) -> usize {
    m.buffers.iter().map(|p| p.allocations.len()).sum()
}

fn num(n: &roxmltree::Node, attr: &str) -> f64 {
    n.attribute(attr).unwrap().parse().unwrap()
}

#[test]
fn memory_map_has_one_rect_per_allocation_and_marks_modes() {
    let p = program();
    let h = hw();
    let m = mapping(&p);
    m.validate(&p, &h).unwrap();
    let svg = memory_map_svg(&p, &h, &m, &legend(Some(12.5e-6)));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "rect", "alloc"), fast_allocations(&m));
    assert_eq!(count(&doc, "rect", "prefetch"), 1);
    // One copy-start tick per prefetch (plus the legend's), one eviction line per eviction.
    assert_eq!(count(&doc, "line", "cs"), 1 + 1);
    assert_eq!(count(&doc, "line", "ev"), 1 + 1);
    // The weight's copy is issued at op 1 and first used at op 2: a hatched copy window.
    assert_eq!(count(&doc, "rect", "cw"), 1 + 1);
    assert!(svg.contains("simulated latency 12.500 µs"), "{svg}");

    let rects: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect") && has_class(n, "alloc"))
        .collect();
    let by_name = |name: &str| {
        *rects
            .iter()
            .find(|r| title_of(**r).starts_with(&format!("{name}\n")))
            .unwrap_or_else(|| panic!("no rect titled {name}"))
    };
    // Time runs left to right over the 3 ops; offsets grow upwards.
    let a = by_name("a & b"); // ops 0..=1, offset 0
    let b = by_name("b"); // ops 1..=2, offset 1024
    assert!(num(&a, "x") < num(&b, "x"));
    assert!((num(&a, "width") - num(&b, "width")).abs() < 0.2);
    assert!(num(&b, "y") < num(&a, "y"));
    assert!((num(&a, "height") - num(&b, "height")).abs() < 0.2);
    let w = by_name(NASTY);
    assert!(has_class(&w, "weight") && has_class(&w, "prefetch"));
    assert!(title_of(w).contains("prefetch: copy issued as op 1 begins, first use op 2"));
    let y = by_name("y");
    assert!(
        title_of(y).contains("eviction issued after op 2"),
        "{}",
        title_of(y)
    );
}

#[test]
fn names_with_xml_special_characters_are_escaped() {
    let p = program();
    let h = hw();
    let m = mapping(&p);
    let map = memory_map_svg(&p, &h, &m, &legend(None));
    assert!(!map.contains(NASTY) && !map.contains("a & b") && !map.contains("by <hand>"));
    assert!(map.contains("w&lt;&amp;&gt;&quot;quote&quot;&apos;s"));
    let doc = roxmltree::Document::parse(&map).unwrap();
    // The parser gives the original names back.
    let titles: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("title"))
        .filter_map(|n| n.text())
        .collect();
    assert!(titles.iter().any(|t| t.starts_with(&format!("{NASTY}\n"))));
    assert!(titles.iter().any(|t| t.starts_with("a & b\n")));
    let texts: String = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter_map(|n| n.text())
        .collect();
    assert!(
        texts.contains("Memory map: p&<q> on hw \"fast\""),
        "{texts}"
    );

    let report = Simulator::new(&p, &h).run(&m, true);
    let tl = timeline_svg(&p, &report, &legend(Some(report.latency_s)));
    assert!(!tl.contains("op0 <conv>") && !tl.contains("k<&>"));
    let doc = roxmltree::Document::parse(&tl).unwrap();
    assert!(doc
        .descendants()
        .filter_map(|n| n.text())
        .any(|t| t.starts_with("op 0 op0 <conv> (k<&>)")));
}

#[test]
fn control_characters_in_names_keep_the_svg_well_formed() {
    let mut buffers = program().buffers().to_vec();
    buffers[2].name = "bad\u{0}\u{1b}name".into();
    let p = Program::new("ctl\u{7}", "", buffers, program().ops().to_vec()).unwrap();
    let m = mapping(&p);
    let svg = memory_map_svg(&p, &hw(), &m, &legend(None));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "rect", "alloc"), fast_allocations(&m));
    assert!(svg.contains("bad\u{FFFD}\u{FFFD}name"));
}

#[test]
fn timeline_has_one_group_per_op_and_a_summary() {
    let p = program();
    let h = hw();
    let m = mapping(&p);
    let report = Simulator::new(&p, &h).run(&m, true);
    let svg = timeline_svg(&p, &report, &legend(Some(report.latency_s)));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let groups: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("g") && has_class(n, "op"))
        .collect();
    assert_eq!(groups.len(), p.len());
    for (t, g) in groups.iter().enumerate() {
        assert!(
            title_of(*g).starts_with(&format!("op {t} ")),
            "{}",
            title_of(*g)
        );
        // Every op has its compute and memory bars and its extent in the boundary band.
        let classes: Vec<&str> = g
            .children()
            .filter(|c| c.has_tag_name("rect"))
            .filter_map(|c| c.attribute("class"))
            .collect();
        assert!(classes.iter().any(|c| c.starts_with('c')), "{classes:?}");
        assert!(classes.iter().any(|c| c.starts_with('m')), "{classes:?}");
        assert!(classes.iter().any(|c| c.starts_with('o')), "{classes:?}");
    }
    let (c, mm, s) = report
        .ops
        .iter()
        .fold((0, 0, 0), |(c, m, s), o| match o.bound {
            accel_sim::Bound::Compute => (c + 1, m, s),
            accel_sim::Bound::Memory => (c, m + 1, s),
            accel_sim::Bound::Stalled => (c, m, s + 1),
        });
    let summary = format!("3 ops: {c} compute-bound, {mm} memory-bound, {s} stalled");
    assert!(svg.contains(&summary), "missing `{summary}`");
    // The output's eviction is waited for at the end: a stall drawn after the last op.
    assert!(report.stall_s > 0.0);
    assert_eq!(count(&doc, "g", "tail"), 1);
}

#[test]
fn inconsistent_inputs_are_drawn_with_a_warning_not_a_panic() {
    let p = program();
    let h = hw();
    let mut m = mapping(&p);
    m.buffers[0].allocations = vec![Allocation {
        level: 7,
        ..alloc(0, 0, 0, Arrival::Prefetch)
    }];
    let svg = memory_map_svg(&p, &h, &m, &legend(Some(f64::NAN)));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "rect", "alloc"), fast_allocations(&m) - 1);
    assert!(svg.contains("warning: 1 allocations"));

    let empty = SimReport {
        latency_s: 1e-3,
        stall_s: 0.0,
        ops: Vec::new(),
    };
    let svg = timeline_svg(&p, &empty, &legend(None));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "g", "op"), 0);
    assert!(svg.contains("no per-op detail"));

    // A report from a longer program: only this program's ops are drawn.
    let mut long = Simulator::new(&p, &h).run(&mapping(&p), true);
    long.ops.push(long.ops[0].clone());
    let svg = timeline_svg(&p, &long, &legend(None));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "g", "op"), p.len());
}

#[test]
fn every_fast_level_gets_a_panel() {
    let p = program();
    let h = Hardware::nnp_i_like();
    let mut m = Mapping::all_slow(&p);
    m.buffers[2].allocations = vec![Allocation {
        level: 2,
        ..alloc(0, 0, 1, Arrival::Defined)
    }];
    m.buffers[1].allocations = vec![alloc(0, 1, 2, Arrival::Prefetch)];
    m.validate(&p, &h).unwrap();
    let svg = memory_map_svg(&p, &h, &m, &legend(None));
    let doc = roxmltree::Document::parse(&svg).unwrap();
    assert_eq!(count(&doc, "rect", "alloc"), 2);
    assert_eq!(count(&doc, "rect", "frame"), 2);
    let sram = svg.find("level 2: SRAM").unwrap();
    let llc = svg.find("level 1: LLC").unwrap();
    assert!(sram < llc, "the fastest level comes first");
}

/// Plays resnet50 (16 MiB of CMEM) taking the highest legal action at every turn.
#[test]
fn a_played_resnet50_game_renders_within_size_limits() {
    let program = Arc::new(bench_workloads::load("resnet50").unwrap());
    let h = Hardware::tpu_v4i_like().with_capacity(1, 16 << 20).unwrap();
    let setup = GameSetup::new(Arc::clone(&program), h.clone(), GameOptions::default()).unwrap();
    let mut game = setup.start();
    while !game.is_terminal() {
        let action = *game.legal_actions().last().unwrap();
        game.apply_action(action).unwrap();
    }
    let m = game.mapping();
    m.validate(&program, &h).unwrap();
    assert!(fast_allocations(&m) > 100, "{}", fast_allocations(&m));
    let report = Simulator::new(&program, &h).run(&m, true);
    let lg = MapLegend {
        workload: "resnet50".into(),
        hardware: h.name.clone(),
        solver: "highest legal action".into(),
        latency_s: Some(report.latency_s),
    };
    let map = memory_map_svg(&program, &h, &m, &lg);
    let tl = timeline_svg(&program, &report, &lg);
    assert!(map.len() < 1 << 20, "map is {} bytes", map.len());
    assert!(tl.len() < 1 << 20, "timeline is {} bytes", tl.len());
    let doc = roxmltree::Document::parse(&map).unwrap();
    assert_eq!(count(&doc, "rect", "alloc"), fast_allocations(&m));
    let doc = roxmltree::Document::parse(&tl).unwrap();
    assert_eq!(count(&doc, "g", "op"), program.len());
}

/// 1,000 ops and over 1,000 buffers, everything in fast memory that fits by start order:
/// still well under a megabyte.
#[test]
fn a_thousand_op_program_stays_small() {
    let p = bench_workloads::synthetic::random_dag(1000, 7);
    assert!(p.buffers().len() >= 1000, "{}", p.buffers().len());
    let h = Hardware::tpu_v4i_like();
    let setup = GameSetup::new(
        Arc::new(p.clone()),
        h.clone(),
        GameOptions {
            order: malloc_game::Order::ByStart,
            ..GameOptions::default()
        },
    )
    .unwrap();
    let mut game = setup.start();
    while !game.is_terminal() {
        let action = game.legal_actions().get(1).copied().unwrap_or(0);
        game.apply_action(action).unwrap();
    }
    let m = game.mapping();
    let report = Simulator::new(&p, &h).run(&m, true);
    let map = memory_map_svg(&p, &h, &m, &legend(Some(report.latency_s)));
    let tl = timeline_svg(&p, &report, &legend(Some(report.latency_s)));
    assert!(fast_allocations(&m) > 500, "{}", fast_allocations(&m));
    assert!(map.len() < 1 << 20, "map is {} bytes", map.len());
    assert!(tl.len() < 1 << 20, "timeline is {} bytes", tl.len());
    let doc = roxmltree::Document::parse(&map).unwrap();
    assert_eq!(count(&doc, "rect", "alloc"), fast_allocations(&m));
    let doc = roxmltree::Document::parse(&tl).unwrap();
    assert_eq!(count(&doc, "g", "op"), 1000);
}
