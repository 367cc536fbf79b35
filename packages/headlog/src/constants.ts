// The spec's fixed sizes and ASCII tags (`witnessed-heads.md`).
export const LEAF_TAG = 'everdict.headlog/1';
export const STH_TAG = 'everdict.headlog.sth/1';
export const COSIGN_TAG = 'everdict.headlog.cosign/1';
export const HASH_SIZE = 32;
/** tag 18 ‖ tenant 32 ‖ run 32 ‖ group 32 ‖ u64 length ‖ head 32 ‖ u64 logged_ms */
export const LEAF_SIZE = 162;
/** tag 22 ‖ u64 tree_size ‖ root 32 ‖ u64 timestamp_ms ‖ log_id 32 */
export const TREE_HEAD_SIZE = 102;
