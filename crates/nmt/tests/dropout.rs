//! Dropout masks drawn at sites (`model/regularizer.rs`): each site's mask is a function of the
//! seed, the update, the site and its size only, so the composed and fused forms of a layer
//! draw the same masks whatever else was drawn before (`tests/fused_model.rs` then checks the
//! two losses agree with dropout on).
use nmt::model::regularizer::{stack_masks, Dropout, DropoutRates, Side, Site, StackShape};
use nmt_data::batch::RowShare;

fn rates() -> DropoutRates {
    DropoutRates { units: 0.3, src_words: 0.1, tgt_words: 0.2, recurrent: 0.25 }
}

const ENC0: Site = Site::State { side: Side::Encoder, layer: 0, dir: 0 };

#[test]
fn a_sites_mask_does_not_depend_on_earlier_draws() {
    let alone = Dropout::new(rates(), 7, 3).recurrent(ENC0, 8, 16);
    let mut d = Dropout::new(rates(), 7, 3);
    let _ = d.source_mask(40, 16);
    let _ = d.units_mask(Site::Maxout, 500);
    let _ = d.recurrent(Site::State { side: Side::Decoder, layer: 0, dir: 0 }, 8, 16);
    assert_eq!(d.recurrent(ENC0, 8, 16), alone);
    // Drawn twice at one site, the mask is the same: the stream restarts.
    assert_eq!(d.recurrent(ENC0, 8, 16), alone);
}

#[test]
fn sites_seeds_and_updates_draw_different_masks() {
    let mask = |seed, step, site| Dropout::new(rates(), seed, step).recurrent(site, 16, 64).unwrap();
    let base = mask(7, 3, ENC0);
    for other in [
        mask(7, 3, Site::State { side: Side::Encoder, layer: 0, dir: 1 }),
        mask(7, 3, Site::State { side: Side::Encoder, layer: 1, dir: 0 }),
        mask(7, 3, Site::State { side: Side::Decoder, layer: 0, dir: 0 }),
        mask(8, 3, ENC0),
        mask(7, 4, ENC0),
    ] {
        let differing = base.iter().zip(&other).filter(|(a, b)| a != b).count();
        // Two independent masks at p = 0.25 differ in 2·0.25·0.75 = 37.5 % of 1 024 places.
        assert!(differing > 250, "only {differing} of 1024 factors differ");
    }
    // Inverted dropout: factors are 0 or 1/(1−p), about 1−p of them kept.
    let kept = base.iter().filter(|&&f| f > 0.0).count() as f64 / base.len() as f64;
    assert!((kept - 0.75).abs() < 0.05, "kept {kept}");
    assert!(base.iter().all(|&f| f == 0.0 || (f - 1.0 / 0.75).abs() < 1e-6));
}

#[test]
fn a_ranks_masks_are_its_rows_of_the_whole_batchs() {
    let shape = StackShape { side: Side::Encoder, first: 0, layers: 2, input_len: 10 * 5 * 8, rows: 10, hidden: 4, dirs: 2 };
    let whole = stack_masks(Some(&mut Dropout::new(rates(), 3, 9)), shape);
    for rank in 0..3 {
        let share = RowShare::of(rank, 3, 10);
        let part_shape = StackShape { rows: share.len, input_len: share.len * 5 * 8, ..shape };
        let part = stack_masks(Some(&mut Dropout::new(rates(), 3, 9).with_share(share)), part_shape);
        // Layer 0 reads the embeddings (no input mask); layer 1's input is `(B, 5, 8)`.
        assert!(part[0].input.is_none());
        let rows = |m: &[f32], inner: usize| m[share.start * inner..(share.start + share.len) * inner].to_vec();
        assert_eq!(part[1].input.clone().unwrap(), rows(whole[1].input.as_ref().unwrap(), 5 * 8));
        // Each layer's state masks are its two directions' `(B, n)` masks side by side.
        for k in 0..2 {
            let (w, p) = (whole[k].state.as_ref().unwrap(), part[k].state.as_ref().unwrap());
            let (wf, wb) = w.split_at(10 * 4);
            let (pf, pb) = p.split_at(share.len * 4);
            assert_eq!(pf, rows(wf, 4));
            assert_eq!(pb, rows(wb, 4));
        }
    }
}
