-- The denormalized fields, kept in the writing transaction.

-- A new post, comment or like carries its author's current username.
CREATE FUNCTION set_user_username() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  SELECT username INTO NEW.user_username FROM users WHERE user_no = NEW.user_no;
  RETURN NEW;
END $$;
CREATE TRIGGER posts_username BEFORE INSERT ON posts
  FOR EACH ROW EXECUTE FUNCTION set_user_username();
CREATE TRIGGER comments_username BEFORE INSERT ON comments
  FOR EACH ROW EXECUTE FUNCTION set_user_username();
CREATE TRIGGER likes_username BEFORE INSERT ON likes
  FOR EACH ROW EXECUTE FUNCTION set_user_username();

-- A rename reaches every post, comment and like of the user.
CREATE FUNCTION rename_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE posts SET user_username = NEW.username WHERE user_no = NEW.user_no;
  UPDATE comments SET user_username = NEW.username WHERE user_no = NEW.user_no;
  UPDATE likes SET user_username = NEW.username WHERE user_no = NEW.user_no;
  RETURN NULL;
END $$;
CREATE TRIGGER users_rename AFTER UPDATE OF username ON users
  FOR EACH ROW WHEN (OLD.username IS DISTINCT FROM NEW.username)
  EXECUTE FUNCTION rename_fan_out();

-- A comment or like counts on its post.
CREATE FUNCTION count_reaction() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE posts
     SET comment_count = comment_count + (TG_TABLE_NAME = 'comments')::int,
         like_count = like_count + (TG_TABLE_NAME = 'likes')::int
   WHERE post_no = NEW.post_no;
  RETURN NULL;
END $$;
CREATE TRIGGER comments_count AFTER INSERT ON comments
  FOR EACH ROW EXECUTE FUNCTION count_reaction();
CREATE TRIGGER likes_count AFTER INSERT ON likes
  FOR EACH ROW EXECUTE FUNCTION count_reaction();
