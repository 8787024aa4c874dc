-- A model file's id from its structure, not its bytes.
--
-- A model loaded from a file was 'onnx:' || the first 12 hex of the file's SHA-256 || '@' ||
-- input height; the same network exported with and without export_params (or with other
-- names) then had two ids, and a fit took it for two CNNs. Its id is now the first 12 hex of
-- the SHA-256 of the structure's text, which common/onnx/tc_model.c (s_structure_hash)
-- writes from what this database keeps of a model:
--   traincast model structure 1
--   input C H W
--   L op op_class params elems_in elems_out d1,d2,...            (each layer, by idx)
--   C c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dilation_h,dilation_w,groups,dtype,layout,bias
--     first_layer multiplicity                                    (each conv, sorted bytewise)
-- every line ending in a newline, booleans as 1 or 0.
--
-- This migration gives every stored file model ('onnx:...') that id: the models row (of
-- several old ids with one structure, the one stored last keeps its layers and convs), the
-- traces and the predictions follow it. Fits keep the ids they were made from (fit_points,
-- fits.models): they record what a fit saw. torchvision:NAME ids do not change.

CREATE TEMP TABLE tc_model_renames ON COMMIT DROP AS
SELECT m.model_id AS old_id,
       'onnx:' || left(encode(sha256(convert_to(
           'traincast model structure 1' || E'\n'
           || 'input ' || m.input_c || ' ' || m.input_h || ' ' || m.input_w || E'\n'
           || coalesce((SELECT string_agg('L ' || l.op || ' ' || l.op_class || ' ' || l.params
                                          || ' ' || l.elems_in || ' ' || l.elems_out || ' '
                                          || coalesce(array_to_string(l.out_shape, ','), '')
                                          || E'\n', '' ORDER BY l.idx)
                        FROM model_layers l WHERE l.model_id = m.model_id), '')
           || coalesce((SELECT string_agg(c.line, '' ORDER BY c.line COLLATE "C")
                        FROM (SELECT 'C ' || concat_ws(',', cc.c, cc.h, cc.w, cc.k, cc.r, cc.s,
                                                       cc.pad_h, cc.pad_w, cc.stride_h,
                                                       cc.stride_w, cc.dilation_h,
                                                       cc.dilation_w, cc.groups, cc.dtype,
                                                       cc.layout,
                                                       CASE WHEN cc.bias THEN 1 ELSE 0 END)
                                     || ' ' || CASE WHEN mc.first_layer THEN 1 ELSE 0 END
                                     || ' ' || mc.multiplicity || E'\n' AS line
                              FROM model_convs mc JOIN conv_configs cc USING (config_id)
                              WHERE mc.model_id = m.model_id) c), ''),
           'UTF8')), 'hex'), 12) || '@' || m.input_h AS new_id,
       m.stored_at
FROM models m
WHERE m.model_id LIKE 'onnx:%';

DELETE FROM tc_model_renames WHERE old_id = new_id;

-- Per new id, the old row whose graph it keeps (none where the new id is stored already).
CREATE TEMP TABLE tc_model_keep ON COMMIT DROP AS
SELECT DISTINCT ON (r.new_id) r.new_id, r.old_id
FROM tc_model_renames r
WHERE NOT EXISTS (SELECT 1 FROM models e WHERE e.model_id = r.new_id)
ORDER BY r.new_id, r.stored_at DESC, r.old_id;

INSERT INTO models (model_id, name, input_c, input_h, input_w, params, flops, source_sha256,
                    stored_at)
SELECT k.new_id, m.name, m.input_c, m.input_h, m.input_w, m.params, m.flops, m.source_sha256,
       m.stored_at
FROM tc_model_keep k JOIN models m ON m.model_id = k.old_id;

UPDATE model_layers l SET model_id = k.new_id FROM tc_model_keep k WHERE l.model_id = k.old_id;
UPDATE model_convs c SET model_id = k.new_id FROM tc_model_keep k WHERE c.model_id = k.old_id;
UPDATE traces t SET model_id = r.new_id FROM tc_model_renames r WHERE t.model_id = r.old_id;
UPDATE predictions p SET model_id = r.new_id FROM tc_model_renames r
WHERE p.model_id = r.old_id;

-- The old rows, and with them the layers and convs of those no new id kept.
DELETE FROM models m USING tc_model_renames r WHERE m.model_id = r.old_id;

COMMENT ON COLUMN models.model_id IS
    'torchvision:NAME@PX, or onnx:<12 hex of the SHA-256 of the structure''s text>@PX for a '
    'file (schema/013_model_structure_ids.sql says what the text holds).';
COMMENT ON COLUMN models.source_sha256 IS
    'SHA-256 of the ONNX bytes the graph came from (the last file of that structure stored).';
