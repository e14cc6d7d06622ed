/* Which task a run is (task.h): the one place that knows. */
#include "task.h"

const cf_task *cf_task_of(const clformer_train_options *o)
{
    return cf_task_named(o->text_path != NULL);
}

const cf_task *cf_task_named(bool lm) { return lm ? &cf_task_lm : &cf_task_translation; }
